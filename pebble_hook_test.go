package weir_test

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/state/pebble"
)

// The Pebble benchmarks of package weir's own tests reach the Pebble
// backend through this hook: those tests cannot import state/pebble,
// which imports weir.
func init() { weir.SetPebbleOpenerForTest(pebble.New("")) }
