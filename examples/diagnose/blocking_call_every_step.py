"""Planted cause: a blocking call in every step. After each step the
program reports its loss to a metrics service and waits for the answer
(simulated here by a local socket server that answers after 30 ms): the
main thread sits off the CPU, in a socket read, for most of the step.

    bottleneck run examples/diagnose/blocking_call_every_step.py

    --fix applies the change the report advises (scripts/predict-vs-measured
    compares its predicted saving with the measured one).
"""
import socket
import sys
import threading
import time

import torch


def serve(listener):
    """A slow metrics service: answers each line after 30 ms."""
    conn, _ = listener.accept()
    try:
        with conn, conn.makefile("rwb") as f:
            for _ in f:
                time.sleep(0.03)
                f.write(b"ok\n")
                f.flush()
    except OSError:
        pass  # the client left (--fix never reads the answers)


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    listener = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=serve, args=(listener,), daemon=True).start()
    service = socket.create_connection(listener.getsockname()).makefile("rwb")
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    for step in range(40):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        service.write(b"loss %f\n" % loss.item())
        service.flush()
        if "--fix" not in sys.argv:
            service.readline()  # PLANTED: waits for the metrics service every step (--fix: never reads the answer)


if __name__ == "__main__":
    main()
