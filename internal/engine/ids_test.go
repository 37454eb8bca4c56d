package engine

import (
	"strings"
	"testing"
)

// idGraph builds source -> [filter] -> keyed (hash edge) -> sink, the
// issue's trial job, with the given parallelism for the keyed operator and
// the sink, and returns its nodes and the keyed one.
func idGraph(filter bool, uids map[string]string, downstreamP int) ([]*Node, map[string]*Node) {
	byName := map[string]*Node{}
	var nodes []*Node
	add := func(name string, kind NodeKind, p int) *Node {
		n := &Node{ID: len(nodes) + 1, Name: name, UID: uids[name], Kind: kind, Parallelism: p}
		nodes = append(nodes, n)
		byName[name] = n
		return n
	}
	up := add("source", KindSource, 2)
	if filter {
		f := add("filter", KindOneInput, 2)
		NewEdge[int](up, "", f, 0, PartitionDefault, nil)
		up = f
	}
	k := add("keyed", KindOneInput, downstreamP)
	NewEdge[int](up, "", k, 0, PartitionHash, func(*int) int32 { return 0 })
	s := add("sink", KindOneInput, downstreamP)
	NewEdge[int](k, "", s, 0, PartitionDefault, nil)
	return nodes, byName
}

// idsOf builds idGraph and returns each operator's id by name.
func idsOf(t *testing.T, filter bool, uids map[string]string, downstreamP int, chaining bool) map[string]string {
	t.Helper()
	nodes, byName := idGraph(filter, uids, downstreamP)
	if err := AssignIDs(nodes, chaining); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, n := range byName {
		out[name] = UIDOf(n)
	}
	return out
}

// TestAutomaticIDs holds automatic ids to the properties of Flink's
// StreamGraphHasherV2: the same program gets the same ids; an operator
// inserted upstream, a change of chaining, or any changed upstream id
// changes them; a UID is the id and shields the operators after it from
// changes before it only as far as their own place in the traversal
// allows (so only UIDs keep ids stable).
func TestAutomaticIDs(t *testing.T) {
	a := idsOf(t, false, nil, 2, true)
	b := idsOf(t, false, nil, 2, true)
	for name, id := range a {
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Errorf("%s: id %q is not 32 hex digits", name, id)
		}
		if b[name] != id {
			t.Errorf("%s: the same job gets ids %s and %s", name, id, b[name])
		}
	}
	if a["source"] == a["keyed"] || a["keyed"] == a["sink"] {
		t.Errorf("operators share an id: %v", a)
	}

	// A filter inserted before the keyBy: the source is chained to it
	// (one more chained output) and the keyed operator is one place
	// further: both ids change, as Flink's.
	f := idsOf(t, true, nil, 2, true)
	if f["source"] == a["source"] || f["keyed"] == a["keyed"] || f["sink"] == a["sink"] {
		t.Errorf("inserting a filter kept ids: before %v, after %v", a, f)
	}

	// Chaining off changes the id of an operator chained to its output
	// (the keyed one, to the sink) and of every operator after it, not of
	// one whose outputs go over the network (the source); so does a
	// parallelism that breaks the chain.
	noChain := idsOf(t, false, nil, 2, false)
	if noChain["keyed"] == a["keyed"] || noChain["source"] != a["source"] {
		t.Errorf("without chaining: the keyed operator (chained to its sink) must change, the source (hash edge) not: %v vs %v", noChain, a)
	}
	if noChain["sink"] == a["sink"] {
		t.Errorf("without chaining the sink after the keyed operator kept its id")
	}
	nodes, byName := idGraph(false, nil, 2)
	byName["sink"].Parallelism = 1 // the keyed operator no longer chains to it
	if err := AssignIDs(nodes, true); err != nil {
		t.Fatal(err)
	}
	if UIDOf(byName["keyed"]) == a["keyed"] || UIDOf(byName["source"]) != a["source"] {
		t.Errorf("a sink at another parallelism: the keyed operator's id must change, the source's not")
	}

	// UIDs are the ids; with UIDs on the stateful operators an inserted
	// filter changes nothing that holds state.
	uids := map[string]string{"source": "numbers", "keyed": "counter"}
	u := idsOf(t, false, uids, 2, true)
	uf := idsOf(t, true, uids, 2, true)
	if u["source"] != "numbers" || u["keyed"] != "counter" || uf["source"] != "numbers" || uf["keyed"] != "counter" {
		t.Errorf("UIDs are not the ids: %v, %v", u, uf)
	}
}

// TestAutomaticIDsTraversal: with several sources and a two-input
// operator, ids follow the breadth-first order from the sources in
// creation order, hashing a node once all its inputs are: the same graph
// built again gets the same ids, and swapping the join's inputs changes
// the join's id (inputs are combined in order).
func TestAutomaticIDsTraversal(t *testing.T) {
	build := func(swap bool) ([]*Node, *Node) {
		var nodes []*Node
		add := func(name string, kind NodeKind) *Node {
			n := &Node{ID: len(nodes) + 1, Name: name, Kind: kind, Parallelism: 1}
			nodes = append(nodes, n)
			return n
		}
		s1, s2 := add("s1", KindSource), add("s2", KindSource)
		m := add("map", KindOneInput)
		NewEdge[int](s1, "", m, 0, PartitionDefault, nil)
		j := add("join", KindTwoInput)
		l, r := m, s2
		if swap {
			l, r = s2, m
		}
		NewEdge[int](l, "", j, 0, PartitionHash, func(*int) int32 { return 0 })
		NewEdge[int](r, "", j, 1, PartitionHash, func(*int) int32 { return 0 })
		s := add("sink", KindOneInput)
		NewEdge[int](j, "", s, 0, PartitionDefault, nil)
		if err := AssignIDs(nodes, true); err != nil {
			t.Fatal(err)
		}
		return nodes, j
	}
	a, ja := build(false)
	b, _ := build(false)
	for i := range a {
		if UIDOf(a[i]) != UIDOf(b[i]) || UIDOf(a[i]) == "" {
			t.Errorf("%s: ids %q and %q", a[i].Name, UIDOf(a[i]), UIDOf(b[i]))
		}
	}
	if _, js := build(true); UIDOf(js) == UIDOf(ja) {
		t.Errorf("swapping the join's inputs kept its id")
	}
}

func TestDuplicateUIDsRefused(t *testing.T) {
	nodes, _ := idGraph(false, map[string]string{"source": "x", "sink": "x"}, 2)
	if err := AssignIDs(nodes, true); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("duplicate UIDs: %v", err)
	}
}

func TestLegacyID(t *testing.T) {
	for id, want := range map[string]int{"node-1": 1, "node-27": 27, "node-0": 0, "node-01": 0, "node-x": 0, "nodes-2": 0, "sums": 0} {
		n, ok := LegacyID(id)
		if ok != (want > 0) || n != want {
			t.Errorf("LegacyID(%q) = %d, %v", id, n, ok)
		}
	}
}
