"""Image classifier on a GPU fed by a DataLoader whose samples are decoded and
augmented in Python in the main process (num_workers=0)."""
import numpy as np, torch, torch.nn as nn, torchvision

class Images(torch.utils.data.Dataset):
    def __len__(self):
        return 4096
    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = rng.integers(0, 255, (160, 160, 3), dtype=np.uint8)   # "decode"
        y0, x0 = rng.integers(0, 32, 2)
        img = img[y0:y0 + 128, x0:x0 + 128].astype(np.float32) / 255.0
        if rng.random() < 0.5:
            img = img[:, ::-1]
        img = (img - img.mean(axis=(0, 1))) / (img.std(axis=(0, 1)) + 1e-6)
        return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))), int(i % 100)

def main():
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=100).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loader = torch.utils.data.DataLoader(Images(), batch_size=64, shuffle=True, num_workers=0)
    for step, (x, y) in enumerate(loader):
        x, y = x.cuda(), y.cuda()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step == 40:
            break
    print("done", float(loss))

if __name__ == "__main__":
    main()
