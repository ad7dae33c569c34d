package trace

// SetLaunch lets the external tests corrupt a launch link.
func (e *Events) SetLaunch(i int, l int32) { e.setLaunch(i, l) }
