// Package probe sends one request to an inference endpoint and measures it:
// the protocol adapter that builds the request and reads the (streamed)
// answer, the exact timing of every output-bearing message, token counts and
// the class of any failure. It knows nothing of load, schedules or windows.
package probe
