// Package archtest holds the test of the import rules of
// docs/ARCHITECTURE.md ("Import rules"): it lists every package of the module
// with the go tool and checks who imports whom.
package archtest
