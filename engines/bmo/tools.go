//go:build tools

// Package tools pins Metal3's baremetal-operator main package so go mod tidy keeps its dependencies.
package tools

import _ "github.com/metal3-io/baremetal-operator"
