package trace

// Well-known strings are interned first, in this order, so analyses can
// compare StrIDs with these constants instead of looking strings up.
const (
	KeyEmpty StrID = iota
	KeyDevice
	KeyStream
	KeyContext
	KeyCorrelation
	KeyExternalID
	KeyGrid
	KeyBlock
	KeyBlocksPerSM
	KeyWarpsPerSM
	KeyOccupancy
	KeyRegisters
	KeySharedMemory
	KeyBytes
	KeyBandwidth
	KeyInputDims
	KeyInputType
	KeyConcreteInputs
	KeyCallStack
	KeyFwdThreadID
	KeyModuleHierarchy
	KeyFlops
	KeyCollectiveName
	KeyInMsgNelems
	KeyOutMsgNelems
	KeyGroupSize
	KeyDtype
	KeyPGName
	KeyPGRanks
	KeyDeviceType
	KeyDeviceID
	KeyKernelBackend
	numKeys
)

var wellKnown = [numKeys]string{
	"", "device", "stream", "context", "correlation", "External id", "grid", "block",
	"blocks per SM", "warps per SM", "est. achieved occupancy %", "registers per thread",
	"shared memory", "bytes", "memory bandwidth (GB/s)", "Input Dims", "Input type",
	"Concrete Inputs", "Call stack", "Fwd thread id", "Module Hierarchy", "flops",
	"Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype",
	"Process Group Name", "Process Group Ranks", "Device Type", "Device Id", "kernel_backend",
}
