# The stable-baselines3 README's PPO example (CartPole), 12,288 timesteps:
# a rollout of 2048 environment steps before every 320 updates.
import gymnasium as gym
from stable_baselines3 import PPO

model = PPO("MlpPolicy", gym.make("CartPole-v1"), seed=0, verbose=0)
model.learn(total_timesteps=12_288)
print("done")
