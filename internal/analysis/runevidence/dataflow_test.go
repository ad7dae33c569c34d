package runevidence

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFeedsBackward: programs with a forward under no_grad in the step,
// the line sampled marked `# <-` and its callers `# caller` (outermost
// first, in order of appearance unless lib). Teachers, frozen encoders
// and target networks feed the loss; evaluation passes do not.
func TestFeedsBackward(t *testing.T) {
	for _, c := range []struct {
		name string
		src  string
		lib  bool // a library calls the function the marked line is in
		want bool
	}{
		{"distillation teacher in a with block", `
def main(teacher, student, opt, x, y):
    for step in range(10):
        with torch.no_grad():
            t_logits = teacher(x)  # <-
        s_logits = student(x)
        kd = F.kl_div(F.log_softmax(s_logits, -1), F.softmax(t_logits, -1))
        loss = 0.5 * kd + 0.5 * F.cross_entropy(s_logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
`, false, true},
		{"evaluation every step in a with block", `
def main(model, opt, x, y, val):
    for step in range(60):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        correct = 0
        with torch.no_grad():
            for vx, vy in val:
                correct += (model(vx).argmax(1) == vy).sum().item()  # <-
        if step % 20 == 0:
            print("step", step, "val acc", correct / 2560, "backward(")  # the string is not code
`, false, false},
		{"a frozen encoder's outputs, diffusers style, over several lines", `
def train(vae, text_encoder, unet, scheduler, accelerator, batch):
    with torch.no_grad():
        latents = vae.encode(batch["pixels"]).latent_dist.sample()  # <-
        latents = latents * 0.18215
        enc = text_encoder(batch["ids"])[0]
    noise = torch.randn_like(latents)
    noisy = scheduler.add_noise(latents,
                                noise, ts)
    pred = unet(noisy, ts,
                enc).sample
    loss = F.mse_loss(pred.float(), noise.float())
    accelerator.backward(loss)
`, false, true},
		{"a one-line with block", `
for x, y in loader:
    with torch.no_grad(): target = target_net(x).max(1).values  # <-
    loss = (q_net(x).gather(1, y) - target).pow(2).mean(); loss.backward()
`, false, true},
		{"a name reused by the training loss after the evaluation", `
def main(model, x, y, vx):
    for step in range(10):
        with torch.no_grad():
            loss = model(vx).mean()  # <-
        print(loss)
        loss = model(x).sub(y).pow(2).mean()
        loss.backward()
`, false, false},
		{"decorated teacher function, called in the loop", `
@torch.no_grad()
def teacher_logits(x):
    return teacher(x)

def main():
    for x in data:
        t = teacher_logits(x)  # <-
        loss = kd(student(x), t)
        loss.backward()
`, false, true},
		{"decorated evaluation, called in the loop", `
def main():
    for x in data:
        student(x).sum().backward()
        val_loss = evaluate(student, val)  # <-
        print(val_loss)
`, false, false},
		{"returned to the program's caller that backpropagates", `
def compute_loss(student, teacher, x):
    with torch.no_grad():
        t = teacher(x)  # <-
    return kd(student(x), t)

def main():
    for x in data:
        loss = compute_loss(student, teacher, x)  # caller
        loss.backward()
`, false, true},
		{"an evaluation function returning its accuracy to a logger", `
def accuracy(model, vx, vy):
    with torch.no_grad():
        out = model(vx)  # <-
    return (out.argmax(1) == vy).float().mean()

def main():
    for x in data:
        model(x).sum().backward()
        acc = accuracy(model, vx, vy)  # caller
        wandb.log({"acc": acc})
`, false, false},
		{"a trainer's training_step returns the loss to the library", `
class Distill(L.LightningModule):
    def training_step(self, batch, i):
        x, y = batch
        with torch.no_grad():
            self.t_out = self.teacher(x)  # <-
        return self.kd(self(x), self.t_out.logits)
`, true, true},
		{"teacher outputs collected in a list", `
def main():
    for xs in data:
        feats = []
        with torch.no_grad():
            for x in xs:
                feats.append(encoder(x))  # <-
        loss = head(torch.cat(feats)).mean()
        loss.backward()
`, false, true},
		{"passed to the program's function that backpropagates", `
def train_step(student, opt, x, t):
    loss = kd(student(x), t)
    loss.backward()
    opt.step()

def main():
    for x in data:
        with torch.no_grad():
            t = teacher(x)  # <-
        train_step(student, opt, x, t)
`, false, true},
		{"passed to the program's function that only logs", `
def report(step, acc):
    print(step, acc)

def main():
    for step, x in enumerate(data):
        student(x).sum().backward()
        with torch.no_grad():
            acc = student(vx).eq(vy).float().mean()  # <-
        report(step, acc)
        scheduler.step(acc)
`, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "train.py")
			src := strings.TrimPrefix(c.src, "\n")
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			var callers []flowFrame
			var marked flowFrame
			for i, l := range strings.Split(src, "\n") {
				switch {
				case strings.HasSuffix(l, "# caller"):
					callers = append(callers, flowFrame{file, i + 1, false})
				case strings.HasSuffix(l, "# <-"):
					marked = flowFrame{file, i + 1, false}
				}
			}
			if marked.line == 0 {
				t.Fatal("no line marked")
			}
			frames := append([]flowFrame{{"/usr/lib/python3.11/runpy.py", 1, true}}, callers...)
			if c.lib {
				frames = append(frames, flowFrame{"/venv/site-packages/lightning/loop.py", 1, true})
			}
			frames = append(frames, marked)
			if got := newSourceCache("").feedsBackward(frames); got != c.want {
				t.Errorf("feeds the backward: %v, want %v", got, c.want)
			}
		})
	}
}

func TestAssignment(t *testing.T) {
	for code, want := range map[string]string{
		"a = f(x=1)":            "a",
		"a, (b, c) = f()":       "a b c",
		"x[i] = y":              "x",
		"self.out: Tensor = y":  "self.out",
		"a = b = g()":           "a b",
		"n += 1":                "n",
		"x >>= 2":               "x",
		"f(a == b)":             "-",
		"if a <= b:":            "-",
		"y = (a := 3)":          "y",
		"*rest, last = items()": "rest last",
	} {
		got := "-"
		if ts, _, _, ok := assignment(code); ok {
			got = strings.Join(ts, " ")
		}
		if got != want {
			t.Errorf("%q: %q, want %q", code, got, want)
		}
	}
}

// FuzzFeedsBackward: any source, any line: an answer, never a crash or a
// hang.
func FuzzFeedsBackward(f *testing.F) {
	f.Add("with torch.no_grad():\n    t = teacher(x)\nloss = f(t)\nloss.backward()\n", 2)
	f.Add("def f(a,\n      b):\n    '''doc\n    t = 1'''\n    x[i] = y = \\\n  g(\"=\", 'a#') # c\n    return x\n", 6)
	f.Add("with no_grad(): a, (b = c\n  if a <= b >>= c:\n", 1)
	f.Fuzz(func(t *testing.T, src string, line int) {
		file := filepath.Join(t.TempDir(), "p.py")
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		c := newSourceCache("")
		c.feedsBackward([]flowFrame{{file, line - 1, false}, {file, line, false}})
		assignment(src)
	})
}
