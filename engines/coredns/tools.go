//go:build tools

// Package tools pins CoreDNS's main package so go mod tidy keeps its dependencies.
package tools

import _ "github.com/coredns/coredns"
