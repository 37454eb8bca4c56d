// Package hooks declares the interfaces through which the root package
// reaches Weir's own plugins (the Pebble state backend, S3 storage, the
// Kafka cluster mode, the REST server, the test harness) without a type of
// an internal package in any exported signature.
//
// A plugin package returns a value of an unexported type that implements
// a small public interface of the root package (weir.StateBackend,
// weir.Storage, weir.Cluster, weir.Plugin...) and, in addition, the
// matching interface declared here, whose methods may use the engine's
// types. The root type-asserts to it. A third party implements the public
// interface alone; the hooks are how Weir's own plugins go further. No
// state lives here: only interface declarations.
package hooks
