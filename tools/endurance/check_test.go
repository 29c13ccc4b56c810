package endurance

import (
	"strings"
	"testing"
	"time"
)

func run(rss func(i int) int64, idleEarly, idleEnd, fdsEarly, fdsEnd int) *Result {
	r := &Result{IdleEarly: idleEarly, IdleEnd: idleEnd, IdleFDsEarly: fdsEarly, IdleFDsEnd: fdsEnd, Exit: "EXITED 0"}
	for i := range 30 {
		r.Samples = append(r.Samples, Sample{At: time.Duration(i+1) * time.Second, RSS: rss(i), Heap: rss(i), Goroutines: 50,
			Classes: map[string]float64{"ok": float64(100 * i), "5xx": float64(i)}})
	}
	return r
}

func TestCheck(t *testing.T) {
	flat := func(i int) int64 { return 100 << 20 }
	tests := []struct {
		name string
		r    *Result
		b    Bounds
		want string // "" holds
	}{
		{"flat", run(flat, 50, 52, 20, 21), Bounds{Classes: []string{"ok", "5xx"}}, ""},
		{"leaking memory", run(func(i int) int64 { return int64(100+20*i) << 20 }, 50, 50, 20, 20), Bounds{}, "the Go heap grew"},
		{"goroutines left", run(flat, 50, 80, 20, 20), Bounds{}, "goroutines left behind"},
		{"idle connections explain them", run(flat, 50, 80, 20, 35), Bounds{ExtraConns: 16}, ""},
		{"sockets left open", run(flat, 50, 80, 20, 35), Bounds{}, "files or sockets left open"},
		{"a class never seen", run(flat, 50, 50, 20, 20), Bounds{Classes: []string{"timeout"}}, "no request counted as timeout"},
	}
	for _, tt := range tests {
		err := tt.r.Check(tt.b)
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	stuck := run(flat, 50, 50, 20, 20)
	for i := 20; i < 30; i++ {
		stuck.Samples[i].Classes = stuck.Samples[19].Classes
	}
	if err := stuck.Check(Bounds{}); err == nil || !strings.Contains(err.Error(), "no request finished") {
		t.Errorf("stuck: %v", err)
	}
	if s := run(flat, 50, 52, 20, 21).Summary(); !strings.Contains(s, "2900 ok") && !strings.Contains(s, "ok 2900") {
		t.Errorf("summary:\n%s", s)
	}
}
