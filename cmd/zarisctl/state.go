package main

import "fmt"

// clusterState is the one-word verdict of `zarisctl status`.
type clusterState int

const (
	stateRunning clusterState = iota // every map member alive and reachable, every partition healthy
	statePartial                     // serving, but something is degraded, recovering or down
	stateStopped                     // no node answers
)

func (s clusterState) String() string {
	switch s {
	case stateRunning:
		return "Running"
	case statePartial:
		return "Partial"
	case stateStopped:
		return "Stopped"
	}
	return fmt.Sprintf("clusterState(%d)", int(s))
}

// exitCode is the process exit code status ends with.
func (s clusterState) exitCode() int {
	switch s {
	case stateRunning:
		return exitOK
	case statePartial:
		return exitPartial
	}
	return exitError
}

// decideState is the verdict over what status fetched: view is the
// cluster as the deciding node (the leader when it answered) sees it, nil
// when no node answered; unreached are the map members whose HTTP API did
// not answer the CLI. It returns the state and why it is not Running.
func decideState(view *clusterDoc, unreached []string) (clusterState, []string) {
	if view == nil {
		return stateStopped, []string{"no node answers"}
	}
	var why []string
	if view.Leader == "" {
		why = append(why, "no control-plane leader")
	}
	if view.MapVersion == 0 || len(view.Partitions) == 0 {
		why = append(why, "no partition map yet")
	}
	if view.TrafficGate != "" && view.TrafficGate != "open" {
		why = append(why, fmt.Sprintf("traffic gate %s on %s", view.TrafficGate, view.Self))
	}
	for _, n := range view.Nodes {
		if n.InMap && n.State != "alive" {
			why = append(why, fmt.Sprintf("member %s %s", n.ID, n.State))
		}
	}
	for _, id := range unreached {
		why = append(why, fmt.Sprintf("member %s does not answer", id))
	}
	for _, p := range view.Partitions {
		if p.Health != "healthy" {
			why = append(why, fmt.Sprintf("partition %d %s", p.ID, p.Health))
		}
	}
	if len(why) > 0 {
		return statePartial, why
	}
	return stateRunning, nil
}
