# The README's Trainer example of lucidrains/denoising-diffusion-pytorch,
# sized for a CPU: 64 x 64 images, a small Unet, FID off (no download).
from denoising_diffusion_pytorch import Unet, GaussianDiffusion, Trainer

model = Unet(dim=32, dim_mults=(1, 2, 4), flash_attn=False)
diffusion = GaussianDiffusion(model, image_size=64, timesteps=1000, sampling_timesteps=50)
trainer = Trainer(
    diffusion,
    'images',
    train_batch_size=16,
    train_lr=8e-5,
    train_num_steps=30,
    gradient_accumulate_every=2,
    ema_decay=0.995,
    amp=False,
    calculate_fid=False,
    save_and_sample_every=1000,
    num_samples=16,
)
trainer.train()
