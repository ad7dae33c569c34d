# The README's example of lucidrains/denoising-diffusion-pytorch, scaled to a CPU.
import sys
from denoising_diffusion_pytorch import Unet, GaussianDiffusion, Trainer

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 60
model = Unet(dim=32, dim_mults=(1, 2, 4), flash_attn=False)
diffusion = GaussianDiffusion(model, image_size=32, timesteps=1000, sampling_timesteps=50)
trainer = Trainer(diffusion, 'images', train_batch_size=16, train_lr=8e-5,
                  train_num_steps=steps, gradient_accumulate_every=2, ema_decay=0.995,
                  amp=False, calculate_fid=False, save_and_sample_every=10**9)
trainer.train()
