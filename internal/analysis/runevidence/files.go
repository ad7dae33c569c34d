package runevidence

import "strings"

// ioFiles are path fragments of Python code that does file or network
// I/O; a main-thread sample with such a frame counts as I/O in the step.
var ioFiles = []string{
	"/torch/serialization.py", "/torch/distributed/checkpoint/", "/logging/", "/json/__init__.py",
	"/json/encoder.py", "/pickle.py", "/numpy/lib/npyio.py", "/numpy/lib/_npyio_impl.py",
	"/torch/utils/tensorboard/", "/tensorboard/", "/wandb/", "/mlflow/", "/safetensors/",
	"/h5py/", "/shutil.py", "/tempfile.py", "/csv.py", "/lightning/pytorch/loggers/",
}

// childProcessFiles mark main-thread samples that start or wait for the
// program's own worker processes (multiprocessing.Process, Pool, Queue):
// bottleneck profiles one process, so the work they do is in no step.
var childProcessFiles = []string{"/multiprocessing/"}

// loaderFiles mark main-thread samples spent getting batches.
var loaderFiles = []string{"/torch/utils/data/"}

// modelFiles are the files a sample's stack passes through when it runs
// the model's forward (module calls), the backward, the optimizer, a
// compiled graph, DDP, or a framework's loop that calls them: work that
// torch.compile(model) or faster model ops reach. Tensor work on the main
// thread outside all of them is the program's own: inline preprocessing,
// synthetic inputs, metrics by hand.
// dataTransformFiles are the libraries' data transforms: nn.Modules
// too, but data preparation, not the model, whichever module calls them
// (torchaudio's Resample applied to each batch in pytorch/tutorials'
// speech command classifier: 36% of the step, resampling the same
// recordings every epoch).
var dataTransformFiles = []string{"/torchvision/transforms/", "/torchaudio/transforms/", "/kornia/augmentation/"}

// IsDataTransform reports whether a class's module (its __module__) is
// one of those libraries' data transforms.
func IsDataTransform(module string) bool {
	for _, f := range dataTransformFiles {
		if strings.HasPrefix(module+".", strings.ReplaceAll(strings.Trim(f, "/"), "/", ".")+".") {
			return true
		}
	}
	return false
}

var modelFiles = []string{
	"/torch/nn/modules/", "/torch/autograd/", "/torch/optim/", "/torch/_dynamo/", "/torch/_functorch/",
	"/torch/_inductor/", "/torch/nn/parallel/", "/torch/distributed/", "/torch/amp/", "/torch/func/",
	"/lightning/", "/pytorch_lightning/", "/transformers/", "/accelerate/",
}
