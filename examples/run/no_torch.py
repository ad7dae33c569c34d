"""A pure-Python program: no torch at all. The Python profile still works."""
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


# about a second of work, however fast the machine, so the sampler sees it
end = time.perf_counter() + 1.0
while True:
    v = fib(24)
    if time.perf_counter() > end:
        break
print("fib", v)
