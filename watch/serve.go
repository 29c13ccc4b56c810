package watch

import (
	"encoding/json"
	"net/http"

	"github.com/infertop/infertop/sanitize"
)

// Handler answers GET /verdict with the newest snapshot's verdict as
// JSON, for the rollout tools: Argo Rollouts' web provider reads a field
// of it (successCondition: result.state != "regressed"), Flagger's
// webhooks its status: 200 while held or undecided, 409 once regressed,
// 503 while no verdict can be given. GET /snapshot is the whole
// snapshot (groups and servers too), GET /metrics the same figures for
// a Prometheus (infertop_watch_*).
func (w *Watch) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /verdict", func(rw http.ResponseWriter, _ *http.Request) {
		s, ok := w.Latest()
		v := s.Verdict
		if !ok {
			v = Verdict{State: Unusable, Why: "no read of the fleet yet", Line: "no verdict: no read of the fleet yet"}
		}
		writeJSON(rw, statusOf(v.State), v)
	})
	mux.Handle("GET /metrics", w.metricsHandler())
	mux.HandleFunc("GET /snapshot", func(rw http.ResponseWriter, _ *http.Request) {
		s, ok := w.Latest()
		if !ok {
			http.Error(rw, "no read of the fleet yet", http.StatusServiceUnavailable)
			return
		}
		writeJSON(rw, http.StatusOK, s)
	})
	return mux
}

// statusOf is a verdict's HTTP status.
func statusOf(state string) int {
	switch state {
	case Regressed:
		return http.StatusConflict
	case Unusable:
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	_, _ = rw.Write(sanitize.JSON(b))
}

// JSON is the snapshot as the watch's --json file holds it, indented and
// sanitised.
func JSON(s Snapshot) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(sanitize.JSON(b), '\n'), nil
}
