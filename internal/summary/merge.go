package summary

import (
	"fmt"
	"maps"
	"sync"
)

// Job is a merge of rank summaries. It keeps, per rank, what the job
// report needs: per step its number (only when the steps are not
// consecutive), time, summed collectives and flags (9 bytes a step), and
// the rank's breakdown summed over its used steps. Merging is the union
// of the ranks, so it is associative and commutative: the report depends
// on the set of summaries, never on the order or grouping they came in.
type Job struct {
	ranks map[int]*rankRec
}

type rankRec struct {
	rank, worldSize    int
	host, device, file string
	counts             Counts
	diag               *RankDiagnosis
	first              int   // the first step number when the steps are consecutive
	nums               []int // step numbers otherwise
	step, coll         []float32
	flags              []uint8
	used               int // steps not excluded
	// sums over the used steps, µs
	sumStep, sumData, sumHost, sumKernel, sumComm float64
}

const (
	flagUsed  = 1 << iota // not excluded
	flagColls             // the step has collectives
)

// NewJob returns an empty job.
func NewJob() *Job { return &Job{ranks: map[int]*rankRec{}} }

// Ranks is the number of ranks merged.
func (j *Job) Ranks() int { return len(j.ranks) }

// Add merges one summary (checked first); a rank merged before is an
// error naming both files.
func (j *Job) Add(s *Summary) error {
	if err := s.Check(); err != nil {
		return fmt.Errorf("%s: %w", s.File, err)
	}
	if old, dup := j.ranks[s.Rank]; dup {
		return fmt.Errorf("rank %d twice: %s and %s", s.Rank, old.file, s.File)
	}
	j.ranks[s.Rank] = record(s)
	return nil
}

// Merge adds o's ranks to j; a rank in both is an error.
func (j *Job) Merge(o *Job) error {
	for r, rec := range o.ranks {
		if old, dup := j.ranks[r]; dup {
			return fmt.Errorf("rank %d twice: %s and %s", r, old.file, rec.file)
		}
	}
	maps.Copy(j.ranks, o.ranks)
	return nil
}

func record(s *Summary) *rankRec {
	n := s.Steps.Len()
	rec := &rankRec{rank: s.Rank, worldSize: s.WorldSize, host: s.Host, device: s.Device, file: s.File, counts: s.Counts, diag: s.Diagnosis,
		step: make([]float32, n), coll: make([]float32, n), flags: make([]uint8, n)}
	consecutive := true
	for i := 1; i < n; i++ {
		if s.Steps.Num[i] != s.Steps.Num[i-1]+1 {
			consecutive = false
			break
		}
	}
	if consecutive && n > 0 {
		rec.first = s.Steps.Num[0]
	} else {
		rec.nums = append([]int(nil), s.Steps.Num...)
	}
	excluded := make(map[int]bool, len(s.Excluded))
	for _, e := range s.Excluded {
		excluded[e] = true
	}
	for i := range n {
		rec.step[i] = float32(s.Steps.StepUs[i])
		rec.coll[i] = float32(s.Steps.CollUs[i])
		if s.Steps.Colls[i] > 0 {
			rec.flags[i] |= flagColls
		}
		if excluded[s.Steps.Num[i]] {
			continue
		}
		rec.flags[i] |= flagUsed
		rec.used++
		rec.sumStep += float64(s.Steps.StepUs[i])
		rec.sumData += float64(s.Steps.DataUs[i])
		rec.sumHost += float64(s.Steps.HostUs[i])
		rec.sumKernel += float64(s.Steps.KernelUs[i])
		rec.sumComm += float64(s.Steps.CommUs[i])
	}
	return rec
}

// num is the step number of the rank's i-th step.
func (r *rankRec) num(i int) int {
	if r.nums != nil {
		return r.nums[i]
	}
	return r.first + i
}

// Failure is a file that could not be merged.
type Failure struct {
	Path string
	Err  error
}

// MergeFiles reads the summary files, workers at a time (at least one),
// into one job. Each file is decoded, reduced to its ranks' records and
// dropped, so memory holds the records and a file per worker. A file
// that cannot be read is a failure and the others are merged; a rank in
// two files is an error.
func MergeFiles(paths []string, workers int) (*Job, []Failure, error) {
	parts := make([]*Job, len(paths))
	errs := make([]error, len(paths))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(workers, len(paths))) {
		wg.Go(func() {
			for i := range next {
				sums, err := ReadFile(paths[i])
				if err != nil {
					errs[i] = err
					continue
				}
				part := NewJob()
				for _, s := range sums {
					if err := part.Add(s); err != nil {
						errs[i] = fmt.Errorf("%s: %w", paths[i], err)
						part = nil
						break
					}
				}
				parts[i] = part
			}
		})
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	job := NewJob()
	var failures []Failure
	for i, part := range parts { // in file order: a duplicate is named the same way every time
		if errs[i] != nil {
			failures = append(failures, Failure{paths[i], errs[i]})
			continue
		}
		if err := job.Merge(part); err != nil {
			return nil, nil, err
		}
	}
	return job, failures, nil
}
