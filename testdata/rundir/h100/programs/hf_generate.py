"""Greedy generation with a small GPT-2 (from a config, random weights), batch 1, on a GPU."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

def main():
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=6, n_embd=512, n_head=8, vocab_size=16000, n_positions=1024)
    model = GPT2LMHeadModel(cfg).cuda().eval()
    prompt = torch.randint(0, 16000, (1, 32), device="cuda")
    with torch.no_grad():
        for i in range(12):
            out = model.generate(prompt, max_new_tokens=96, do_sample=False, pad_token_id=0)
    print(out.shape)

if __name__ == "__main__":
    main()
