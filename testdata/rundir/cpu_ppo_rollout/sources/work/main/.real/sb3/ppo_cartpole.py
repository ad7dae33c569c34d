# stable-baselines3's README example: PPO on CartPole-v1
import gymnasium as gym
from stable_baselines3 import PPO

env = gym.make("CartPole-v1")
model = PPO("MlpPolicy", env, verbose=0)
model.learn(total_timesteps=20_000)
print("done")
