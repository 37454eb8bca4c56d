package job

import "fmt"

// Attach attaches plugins to a job that starts, in order, with attach,
// which returns the function that stops the plugin (nil: nothing to stop),
// or false if it does not attach it; the returned function stops them,
// last attached first. If one fails, those attached before it are stopped
// and the error names it.
func Attach[P interface{ PluginName() string }](plugins []P, attach func(P) (stop func(), ok bool, err error)) (func(), error) {
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	for _, p := range plugins {
		stop, ok, err := attach(p)
		if !ok {
			continue
		}
		if stop == nil {
			stop = func() {}
		}
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("weir: %s: %w", p.PluginName(), err)
		}
		stops = append(stops, stop)
	}
	return stopAll, nil
}
