/*
Copyright 2026 The Sandbar Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package resources

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// InstanceWatchesMetric is the name of the gauge of watched classes.
const InstanceWatchesMetric = "sandbar_mcp_instance_watches"

// instanceWatches counts, by class, the watches of a class's instances: a class has
// one while a session subscribes to one of its instances, and no series otherwise.
// Idle, with no subscriptions, the gauge has no series whatever the number of
// classes. It is served on the manager's metrics endpoint.
var instanceWatches = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: InstanceWatchesMetric,
	Help: "Watches of a class's instances by the MCP server (one while a session subscribes to one of them).",
}, []string{"class"})

var (
	watchesMu sync.Mutex
	watched   = map[string]int{}
)

func init() { metrics.Registry.MustRegister(instanceWatches) }

// watchStarted and watchStopped keep the gauge, whose series of a class goes when its
// last watch (of every server in the process) stops.
func watchStarted(class string) {
	watchesMu.Lock()
	defer watchesMu.Unlock()
	watched[class]++
	instanceWatches.WithLabelValues(class).Set(float64(watched[class]))
}

func watchStopped(class string) {
	watchesMu.Lock()
	defer watchesMu.Unlock()
	if watched[class]--; watched[class] > 0 {
		instanceWatches.WithLabelValues(class).Set(float64(watched[class]))
		return
	}
	delete(watched, class)
	instanceWatches.DeleteLabelValues(class)
}
