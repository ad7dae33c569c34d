# Inference profiled without a schedule: each generated token is one
# record_function("decode_step") range the program names itself; no
# optimizer and no DataLoader. No ProfilerStep#N marks.
import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function


def main(out):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2).eval()
    head = torch.nn.Linear(128, 1000)
    emb = torch.nn.Embedding(1000, 128)
    tokens = torch.randint(0, 1000, (1, 8))
    with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(16):
            with record_function("decode_step"):
                h = model(emb(tokens))  # no KV cache: the whole prefix again
                nxt = head(h[:, -1]).argmax(-1, keepdim=True)
                tokens = torch.cat([tokens, nxt], dim=1)
    prof.export_chrome_trace(out)


if __name__ == "__main__":
    main(sys.argv[1])
