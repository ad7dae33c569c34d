# TabNet on a synthetic tabular task, as pytorch-tabnet's README calls it
# (TabNetClassifier().fit(X_train, Y_train, eval_set=[(X_valid, y_valid)])).
import sys
import numpy as np
from pytorch_tabnet.tab_model import TabNetClassifier

rng = np.random.default_rng(0)
n, d = 50_000, 54  # forest-covertype-like width
X = rng.standard_normal((n, d)).astype(np.float32)
w = rng.standard_normal(d)
y = (X @ w + 0.5 * rng.standard_normal(n) > 0).astype(np.int64)
X_train, y_train, X_valid, y_valid = X[:40_000], y[:40_000], X[40_000:], y[40_000:]

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
clf = TabNetClassifier(verbose=1, device_name="cpu")
clf.fit(X_train, y_train, eval_set=[(X_valid, y_valid)], max_epochs=epochs, patience=0, batch_size=1024, virtual_batch_size=128)
print("valid acc", (clf.predict(X_valid) == y_valid).mean())
