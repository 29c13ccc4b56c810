package latest

import "testing"

func TestLatestWins(t *testing.T) {
	var h Hub[int]
	if _, ok := h.Latest(); ok {
		t.Fatal("a value before the first Publish")
	}
	ch, cancel := h.Subscribe()
	defer cancel()
	h.Publish(1)
	h.Publish(2) // replaces the unread 1
	if v := <-ch; v != 2 {
		t.Fatalf("read %d, want the newest, 2", v)
	}
	late, cancelLate := h.Subscribe()
	defer cancelLate()
	if v := <-late; v != 2 {
		t.Fatalf("a late subscriber read %d, want the newest, 2", v)
	}
	h.Publish(3)
	h.Close()
	h.Publish(4) // dropped
	if v, ok := <-ch; !ok || v != 3 {
		t.Fatalf("read %d, %v after Close, want the last, 3", v, ok)
	}
	if _, ok := <-ch; ok {
		t.Fatal("the channel is open after Close")
	}
	after, _ := h.Subscribe()
	if v, ok := <-after; !ok || v != 3 {
		t.Fatalf("a subscriber after Close read %d, %v, want the last, 3", v, ok)
	}
	if _, ok := <-after; ok {
		t.Fatal("a subscriber after Close has an open channel")
	}
	if v, _ := h.Latest(); v != 3 {
		t.Fatalf("Latest %d after Close, want 3", v)
	}
}

func TestUnsubscribeTwice(t *testing.T) {
	var h Hub[string]
	ch, cancel := h.Subscribe()
	cancel()
	cancel()
	if _, ok := <-ch; ok {
		t.Fatal("open after unsubscribing")
	}
	h.Publish("x") // no subscriber left: must not block or panic
	h.Close()
	h.Close()
}
