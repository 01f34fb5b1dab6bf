package clientgo

// http.RoundTrippers wrapped around client-go's transport
// (rest.Config.WrapTransport): one counts LIST and WATCH requests, one
// records answers that are not in the content type asked for.

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/transport"
)

// requestCounts counts a client's LIST and WATCH requests by path.
type requestCounts struct {
	mu      sync.Mutex
	lists   map[string]int
	watches map[string]int
	log     []string
}

func newRequestCounts() *requestCounts {
	return &requestCounts{lists: map[string]int{}, watches: map[string]int{}}
}

// wrap is a rest.Config.WrapTransport.
func (c *requestCounts) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		q := req.URL.Query()
		w := q.Get("watch")
		c.mu.Lock()
		if req.Method == http.MethodGet {
			if w == "true" || w == "1" {
				c.watches[req.URL.Path]++
				c.log = append(c.log, "WATCH "+req.URL.RequestURI())
			} else {
				c.lists[req.URL.Path]++
				c.log = append(c.log, "LIST "+req.URL.RequestURI())
			}
		}
		c.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// totals is the number of LIST and WATCH requests so far.
func (c *requestCounts) totals() (lists, watches int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.lists {
		lists += n
	}
	for _, n := range c.watches {
		watches += n
	}
	return
}

// requests is every request so far, in order.
func (c *requestCounts) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.log...)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// contentTypeCheck records every successful answer whose media type is not
// want (a watch's "...;stream=watch" is want too).
func contentTypeCheck(want string, bad *[]string) transport.WrapperFunc {
	var mu sync.Mutex
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && resp.StatusCode < 300 {
				mt, _, perr := mime.ParseMediaType(resp.Header.Get("Content-Type"))
				if perr != nil || mt != want {
					mu.Lock()
					*bad = append(*bad, fmt.Sprintf("%s answered %q", strings.TrimPrefix(req.URL.RequestURI(), ""), resp.Header.Get("Content-Type")))
					mu.Unlock()
				}
			}
			return resp, err
		})
	}
}
