package probe

import "net/http"

// ConfigureHTTP2 has t speak HTTP/2 through golang.org/x/net/http2, as
// the load client's transports do (see configureHTTP2: the copy bundled
// in net/http deadlocks for good on a hostile WINDOW_UPDATE). Other
// clients of a server infertop loads (the telemetry scraper) use it too,
// so that no connection of the run can hang that way.
func ConfigureHTTP2(t *http.Transport) error { return configureHTTP2(t) }
