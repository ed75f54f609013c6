// Package archtest holds the test of DESIGN.md's import rules ("Packages
// and the direction of imports"): it lists every package of the module
// with the go tool and checks who imports whom.
package archtest
