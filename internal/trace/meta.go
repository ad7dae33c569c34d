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
	ID                          int    `json:"id"`
	Name                        string `json:"name"`
	TotalGlobalMem              int64  `json:"totalGlobalMem"`
	ComputeMajor                int    `json:"computeMajor"`
	ComputeMinor                int    `json:"computeMinor"`
	NumSMs                      int    `json:"numSms"`
	MaxThreadsPerMultiprocessor int    `json:"maxThreadsPerMultiprocessor"`
	MaxThreadsPerBlock          int    `json:"maxThreadsPerBlock"`
	RegsPerMultiprocessor       int    `json:"regsPerMultiprocessor"`
	SharedMemPerMultiprocessor  int64  `json:"sharedMemPerMultiprocessor"`
	WarpSize                    int    `json:"warpSize"`
}

// DistributedInfo is the distributedInfo block.
type DistributedInfo struct {
	Backend     string          `json:"backend"`
	Rank        int             `json:"rank"`
	WorldSize   int             `json:"world_size"`
	PGCount     int             `json:"pg_count"`
	NCCLVersion string          `json:"nccl_version"`
	PGConfig    json.RawMessage `json:"pg_config,omitempty"`
	HasRank     bool            `json:"-"`
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
