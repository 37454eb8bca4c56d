// Package windowing is the engine of Weir's window operator, with Apache
// Flink's WindowOperator semantics (1.20): window assignment, per-window
// lateness, triggers with their partitioned state and timers (one timer
// service whose namespace is the window, shared with the cleanup timers),
// merging windows through a merging-window set, cleanup at max timestamp +
// allowed lateness, and late data. It is generic over the key K, the input
// IN, what the window contents yield V and the window type W; the root
// package plugs in the contents state and the window function.
//
// An Operator belongs to one subtask and is driven from its task goroutine.
package windowing
