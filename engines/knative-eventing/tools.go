//go:build tools

// Package tools pins Knative Eventing's main packages so go mod tidy keeps their dependencies.
package tools

import (
	_ "knative.dev/eventing/cmd/apiserver_receive_adapter"
	_ "knative.dev/eventing/cmd/broker/filter"
	_ "knative.dev/eventing/cmd/broker/ingress"
	_ "knative.dev/eventing/cmd/controller"
	_ "knative.dev/eventing/cmd/event_display"
	_ "knative.dev/eventing/cmd/in_memory/channel_controller"
	_ "knative.dev/eventing/cmd/in_memory/channel_dispatcher"
	_ "knative.dev/eventing/cmd/jobsink"
	_ "knative.dev/eventing/cmd/mtchannel_broker"
	_ "knative.dev/eventing/cmd/mtping"
	_ "knative.dev/eventing/cmd/requestreply"
	_ "knative.dev/eventing/cmd/webhook"
)
