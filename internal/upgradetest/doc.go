// Package upgradetest holds types for the upgrade tests of the root
// package: v1/acc and v2/acc are two versions of one package "acc", so a
// type keeps its name (acc.Key) while its definition changes, as it does
// when a job's program is changed between a savepoint and its restore.
package upgradetest
