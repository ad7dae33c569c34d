package trace

import "encoding/json"

// Meta is the trace's top-level metadata.
type Meta struct {
	// BaseTimeNs is baseTimeNanoseconds (newer Kineto): every event time is
	// relative to it. 0 when the trace has absolute times.
	BaseTimeNs      int64
	SchemaVersion   int
	DisplayTimeUnit string
	Devices         []Device
	Distributed     *DistributedInfo
	// Other holds every other top-level key (profiler flags such as
	// with_stack, versions, user metadata from add_metadata) as raw JSON,
	// in file order.
	Other []KeyValue
	// Legacy is true for the autograd profiler's export (a bare list of
	// events without categories).
	Legacy bool
}

// KeyValue is one metadata entry with its value as raw JSON.
type KeyValue struct {
	Key   string
	Value json.RawMessage
}

// Device is one entry of deviceProperties.
type Device struct {
	// ID is the device index, as the GPU rows' pid (deviceProperties' "id").
	ID int `json:"id"`
	// Name is the device's product name.
	Name string `json:"name"`
	// TotalGlobalMem is the device memory, in bytes.
	TotalGlobalMem int64 `json:"totalGlobalMem"`
	// ComputeMajor is the major compute capability.
	ComputeMajor int `json:"computeMajor"`
	// ComputeMinor is the minor compute capability.
	ComputeMinor int `json:"computeMinor"`
	// NumSMs is the number of streaming multiprocessors.
	NumSMs int `json:"numSms"`
	// MaxThreadsPerMultiprocessor is the most resident threads per multiprocessor.
	MaxThreadsPerMultiprocessor int `json:"maxThreadsPerMultiprocessor"`
	// MaxThreadsPerBlock is the most threads per block.
	MaxThreadsPerBlock int `json:"maxThreadsPerBlock"`
	// RegsPerMultiprocessor is the 32-bit registers per multiprocessor.
	RegsPerMultiprocessor int `json:"regsPerMultiprocessor"`
	// SharedMemPerMultiprocessor is the shared memory per multiprocessor, in bytes.
	SharedMemPerMultiprocessor int64 `json:"sharedMemPerMultiprocessor"`
	// WarpSize is the threads per warp.
	WarpSize int `json:"warpSize"`
}

// DistributedInfo is the distributedInfo block.
type DistributedInfo struct {
	// Backend is the process group backend: nccl, gloo, ...
	Backend string `json:"backend"`
	// Rank is the process's rank in the job.
	Rank int `json:"rank"`
	// WorldSize is the number of ranks in the job.
	WorldSize int `json:"world_size"`
	// PGCount is the number of process groups.
	PGCount int `json:"pg_count"`
	// NCCLVersion is the NCCL version ("" without NCCL).
	NCCLVersion string `json:"nccl_version"`
	// PGConfig is the process groups' configuration, as the trace writes it.
	PGConfig json.RawMessage `json:"pg_config,omitempty"`
	HasRank  bool            `json:"-"`
}

// Flag returns a boolean profiler flag (with_stack, record_shapes, ...) and
// whether the trace records it.
func (m *Meta) Flag(key string) (value, present bool) {
	for _, kv := range m.Other {
		if kv.Key == key {
			var b bool
			if json.Unmarshal(kv.Value, &b) == nil {
				return b, true
			}
			var n int
			if json.Unmarshal(kv.Value, &n) == nil {
				return n != 0, true
			}
			return false, true
		}
	}
	return false, false
}

// Device returns the properties of device id, or nil.
func (m *Meta) Device(id int) *Device {
	for i := range m.Devices {
		if m.Devices[i].ID == id {
			return &m.Devices[i]
		}
	}
	return nil
}
