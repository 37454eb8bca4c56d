package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Operator ids. State in a checkpoint or savepoint belongs to an operator
// id: the operator's UID if it has one, else an id derived from the graph
// with the properties of Flink's StreamGraphHasherV2 (Flink's automatic
// JobVertexIDs): a breadth-first traversal from the sources (in the order
// they were created), in which a node is hashed once all its inputs are;
// the hash covers the number of nodes hashed before it (its position in
// that traversal) once, plus once more per output edge that is chained,
// and is then combined with the hash of each input in input order. So an
// automatic id is the same for the same program, and changes when an
// operator is added or removed before it in the traversal, when its
// chaining to its outputs changes (chaining on or off, a parallelism
// change that makes or breaks a chain, DisableChaining downstream), or
// when any upstream id changes; the user function and the operator's name
// are not part of it. A UID's hash is the hash of its text, whatever its
// place in the graph, so operators downstream of UIDs depend only on
// their own place and on those UIDs. Flink has the same rules, which is
// why it recommends a UID on every stateful operator; a restore that
// finds state for an id the job does not have refuses to start unless
// state may be dropped.
//
// The hash function is SHA-256 cut to 16 bytes, not Flink's Murmur3: the
// ids are Weir's own (Flink's graphs differ from Weir's anyway), printed
// as 32 hexadecimal digits.

// AssignIDs gives every node without a UID its automatic id, derived from
// the graph as above, and checks that UIDs are unique. nodes are in
// creation (topological) order; chaining is the job's chaining setting.
func AssignIDs(nodes []*Node, chaining bool) error {
	byUID := map[string]*Node{}
	for _, n := range nodes {
		if n.UID == "" {
			continue
		}
		if o, dup := byUID[n.UID]; dup {
			return fmt.Errorf("operators %q and %q have the same UID %q; UIDs must be unique within a job", o.Name, n.Name, n.UID)
		}
		byUID[n.UID] = n
	}
	outs := map[*Node][]*Edge{}
	member := map[*Node]bool{}
	for _, n := range nodes {
		member[n] = true
	}
	for _, n := range nodes {
		for _, e := range n.Inputs {
			outs[e.From] = append(outs[e.From], e)
		}
	}
	hashes := map[*Node][16]byte{}
	var queue []*Node
	queued := map[*Node]bool{}
	for _, n := range nodes { // sources in creation order
		if len(n.Inputs) == 0 {
			queue = append(queue, n)
			queued[n] = true
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if !hashNode(n, outs[n], hashes, chaining) {
			queued[n] = false // visited again from its last input
			continue
		}
		for _, e := range outs[n] {
			if c := e.To; member[c] && !queued[c] {
				queue = append(queue, c)
				queued[c] = true
			}
		}
	}
	for _, n := range nodes {
		h, ok := hashes[n]
		if !ok {
			return fmt.Errorf("operator %q: its inputs do not lead back to a source of the job", n.Name)
		}
		n.autoID = hex.EncodeToString(h[:])
	}
	return nil
}

// hashNode hashes n if all its inputs are hashed and reports whether it did.
func hashNode(n *Node, outs []*Edge, hashes map[*Node][16]byte, chaining bool) bool {
	if n.UID != "" {
		hashes[n] = hash16([]byte(n.UID))
		return true
	}
	for _, e := range n.Inputs {
		if _, ok := hashes[e.From]; !ok {
			return false
		}
	}
	pos := uint32(len(hashes))
	local := binary.BigEndian.AppendUint32(nil, pos)
	for _, e := range outs {
		if chainable(e, chaining) {
			local = binary.BigEndian.AppendUint32(local, pos)
		}
	}
	h := hash16(local)
	for _, e := range n.Inputs {
		in := hashes[e.From]
		for j := range h {
			h[j] = h[j]*37 ^ in[j]
		}
	}
	hashes[n] = h
	return true
}

func hash16(b []byte) [16]byte {
	s := sha256.Sum256(b)
	return [16]byte(s[:16])
}

// chainable reports whether e is chained (the plan puts its two ends in
// one task): a forward edge (or a default one between equal parallelisms)
// into a one-input operator with no other input and chaining allowed.
func chainable(e *Edge, chaining bool) bool {
	part := e.Partition
	if part == PartitionDefault && e.From.Parallelism == e.To.Parallelism {
		part = PartitionForward
	}
	return chaining && part == PartitionForward && e.From.Kind != KindExternal &&
		e.To.Kind == KindOneInput && len(e.To.Inputs) == 1 && !e.To.NoChain &&
		e.From.Parallelism == e.To.Parallelism
}

// LegacyID reports whether id has the form of the positional automatic
// ids of earlier versions ("node-N", N the operator's place in the order
// the job was built, from 1), and returns N. Such an id names no operator
// now, unless one has it as its UID.
func LegacyID(id string) (int, bool) {
	rest, ok := strings.CutPrefix(id, "node-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}
