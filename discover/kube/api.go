package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"k8s.io/client-go/rest"

	"github.com/infertop/infertop/readlimit"
)

// MaxValues bounds the JSON values of one response, counted before it is
// decoded: a small body of many empty objects ([{},{},...]) would cost
// far more in Go values than in bytes. A page of pageSize real pods,
// managed fields and all, holds under a tenth of it.
const MaxValues = 200_000

// ErrTooManyValues is a response of more JSON values than MaxValues.
var ErrTooManyValues = errors.New("a response of more values than the most decoded")

// The API's objects as far as a target needs them, decoded from JSON:
// client-go's own types cost over a kilobyte each before any field is
// set, and a list of them is the server's to size.
type (
	listMeta struct {
		Continue string `json:"continue"`
	}
	objectMeta struct {
		Name              string            `json:"name"`
		Labels            map[string]string `json:"labels"`
		DeletionTimestamp string            `json:"deletionTimestamp"`
	}
	podList struct {
		Metadata listMeta `json:"metadata"`
		Items    []podObj `json:"items"`
	}
	podObj struct {
		Metadata objectMeta `json:"metadata"`
		Spec     struct {
			Containers []struct {
				Ports []struct {
					Name          string `json:"name"`
					ContainerPort int    `json:"containerPort"`
				} `json:"ports"`
			} `json:"containers"`
		} `json:"spec"`
		Status struct {
			Phase      string `json:"phase"`
			PodIP      string `json:"podIP"`
			Conditions []struct {
				Type   string `json:"type"`
				Status string `json:"status"`
			} `json:"conditions"`
		} `json:"status"`
	}
	sliceList struct {
		Metadata listMeta   `json:"metadata"`
		Items    []sliceObj `json:"items"`
	}
	sliceObj struct {
		Metadata    objectMeta `json:"metadata"`
		AddressType string     `json:"addressType"`
		Endpoints   []struct {
			Addresses  []string `json:"addresses"`
			Conditions struct {
				Ready *bool `json:"ready"`
			} `json:"conditions"`
			TargetRef *struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"targetRef"`
		} `json:"endpoints"`
		Ports []struct {
			Name *string `json:"name"`
			Port *int    `json:"port"`
		} `json:"ports"`
	}
)

// ready is the pod's Ready condition.
func (p *podObj) ready() bool {
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// namedPort is the number of the container port called name, 0 if none.
func (p *podObj) namedPort(name string) int {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == name && cp.ContainerPort >= 1 && cp.ContainerPort <= 65535 {
				return cp.ContainerPort
			}
		}
	}
	return 0
}

// namedPort is the number of the slice's port called name, 0 if none.
func (sl *sliceObj) namedPort(name string) int {
	for _, p := range sl.Ports {
		if p.Name != nil && *p.Name == name && p.Port != nil && *p.Port >= 1 && *p.Port <= 65535 {
			return *p.Port
		}
	}
	return 0
}

// page gets one page of a list (req: the resource in its namespace),
// the objects labelled to match selector from the continue token next
// on, and decodes it into v once its values are counted.
func page(ctx context.Context, req *rest.Request, selector, next string, v any) error {
	req = req.Param("limit", strconv.Itoa(pageSize))
	if selector != "" {
		req = req.Param("labelSelector", selector)
	}
	if next != "" {
		req = req.Param("continue", next)
	}
	body, err := req.DoRaw(ctx)
	if err != nil {
		// client-go keeps a JSON Status's message out of its error: the
		// server's own words say more (forbidden, and to whom).
		var st struct {
			Message string `json:"message"`
		}
		if len(body) > 0 && readlimit.JSONValues(body, 1000) <= 1000 && json.Unmarshal(body, &st) == nil && st.Message != "" {
			return &serverSaid{msg: st.Message, err: err}
		}
		return err
	}
	if n := readlimit.JSONValues(body, MaxValues); n > MaxValues {
		return fmt.Errorf("%w (%d)", ErrTooManyValues, MaxValues)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("not a list: %w", err)
	}
	return nil
}

// serverSaid is an error of client-go's with the message of the API
// server's Status.
type serverSaid struct {
	msg string
	err error
}

func (e *serverSaid) Error() string { return e.msg }

// Unwrap is client-go's error, its kind (forbidden, not found) kept.
func (e *serverSaid) Unwrap() error { return e.err }
