//go:build tools

// Package tools pins Knative Serving's admission webhook so go mod tidy keeps its dependencies.
package tools

import _ "knative.dev/serving/cmd/webhook"
