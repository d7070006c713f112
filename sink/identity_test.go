package sink

import (
	"fmt"
	"testing"
)

func TestGenID(t *testing.T) {
	id := ChunkID("", "app", []byte("chunk"))
	if GenID(id, 0) != id {
		t.Errorf("generation 0 is %s, want the content id %s", GenID(id, 0), id)
	}
	seen := map[string]int{}
	for g := 0; g < 1000; g++ {
		gid := GenID(id, g)
		if len(gid) != len(id) {
			t.Fatalf("generation %d: id %q of %d digits, want %d", g, gid, len(gid), len(id))
		}
		if prev, ok := seen[gid]; ok {
			t.Fatalf("generations %d and %d share id %s", prev, g, gid)
		}
		seen[gid] = g
	}
	if GenID(id, 1) == GenID(ChunkID("", "app", []byte("chunk2")), 1) {
		t.Error("two contents share generation 1's id")
	}
}

// Filled past its bound, contents keeps at most max, and forgets those
// with the oldest record times first, whatever the order they came in.
func TestContentsForgetsTheOldest(t *testing.T) {
	const max = 1000
	c := newContents(max)
	for i := 0; i < 3*max; i++ {
		// Record times rise, with every tenth content late (old times).
		newest := int64(i)
		if i%10 == 0 {
			newest = -int64(i)
		}
		c.put(fmt.Sprint(i), occurrence{gen: 1, newest: newest})
		if n := c.len(); n > max {
			t.Fatalf("after %d contents %d remembered, more than %d", i+1, n, max)
		}
	}
	for i := 3*max - max/2; i < 3*max; i++ {
		if _, ok := c.get(fmt.Sprint(i)); !ok && i%10 != 0 {
			t.Errorf("content %d, among the newest, was forgotten", i)
		}
	}
	for i := 0; i < 2*max; i += 10 {
		if _, ok := c.get(fmt.Sprint(i)); ok {
			t.Errorf("content %d, of an old time, is still remembered", i)
		}
	}
}

// What one remembered content costs, so the README's bound holds.
func TestContentsMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("heap sizes under the race detector are not the plugin's")
	}
	before := heapAfterGC()
	c := newContents(maxContents)
	for i := 0; i < maxContents; i++ {
		c.put(ChunkID("", "app", []byte(fmt.Sprint(i))), occurrence{gen: 1, newest: int64(i)})
	}
	after := heapAfterGC()
	per := (int64(after) - int64(before)) / maxContents
	t.Logf("%d contents: %d KiB, %d bytes each", c.len(), (int64(after)-int64(before))>>10, per)
	if total := int64(after) - int64(before); total > 4<<20 {
		t.Errorf("%d contents take %d KiB, more than the 4 MiB the README allows", maxContents, total>>10)
	}
}

// A full memo forgets the oldest unpinned chunk (a memo holding writes in
// doubt is pinned), and the oldest when every one is pinned.
func TestBoundedKeepsPinned(t *testing.T) {
	b := newBounded[int](3)
	b.pinned = func(v int) bool { return v < 0 }
	b.put("a", -1)
	b.put("b", 2)
	b.put("c", -3)
	b.put("d", 4) // forgets b
	if _, ok := b.get("b"); ok {
		t.Error("b (unpinned, oldest of those) kept")
	}
	for _, id := range []string{"a", "c", "d"} {
		if _, ok := b.get(id); !ok {
			t.Errorf("%s forgotten", id)
		}
	}
	b.put("e", 5) // forgets d
	b.drop("e")
	b.put("f", -6)
	b.put("g", -7) // a, c, f pinned: forgets a
	if _, ok := b.get("a"); ok {
		t.Error("a kept when all were pinned")
	}
}
