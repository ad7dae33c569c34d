package runevidence

// ThreadEnvVars set torch's intra-op thread count at start-up, first
// match wins (ATen reads OMP_NUM_THREADS, then MKL_NUM_THREADS), unless
// the program calls torch.set_num_threads.
var ThreadEnvVars = []string{"OMP_NUM_THREADS", "MKL_NUM_THREADS"}
