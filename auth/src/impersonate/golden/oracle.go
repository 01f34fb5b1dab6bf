// The oracle behind golden.json: each case run through kube-apiserver
// v1.37.2's own WithConstrainedImpersonation (a fresh handler per case, so
// no cache carries over, except from the case's Prior request), with an
// authorizer that allows by the case's rules and records every check.
//
// Not part of any Go module here. To regenerate (offline, from the module
// cache the differential tests' kube-apiserver build fills):
//
//	d=$(mktemp -d) && cp testkit/kube-apiserver/go.mod testkit/kube-apiserver/go.sum "$d" &&
//	  sed -i 's#^module .*#module oracle#' "$d/go.mod" &&
//	  cp auth/src/impersonate/golden/oracle.go "$d/main.go" &&
//	  (cd "$d" && GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off go run .) \
//	    < auth/src/impersonate/golden/golden.json > "$d/out.json"
//
// then write out.json back one case per line (the inputs are kept, the
// outcomes replaced). New cases: add their inputs (Name, Requester,
// Request, Headers, Allow, optionally Prior) to golden.json and rerun.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/filters/impersonation"
	"k8s.io/apiserver/pkg/endpoints/request"
)

type Rule struct {
	User, Group, Verb, APIGroup, Resource, Subresource, Name, Namespace, Path *string `json:",omitempty"`
	Error                                                                     string  `json:",omitempty"`
	Deny                                                                      bool    `json:",omitempty"`
}

type Check struct {
	User                                                                     user.DefaultInfo
	Verb, APIGroup, APIVersion, Resource, Subresource, Name, Namespace, Path string
	ResourceRequest                                                          bool
	Allowed                                                                  bool
}

type Case struct {
	Name       string
	Requester  user.DefaultInfo
	Request    request.RequestInfo
	Headers    [][2]string
	Prior      [][2]string `json:",omitempty"`
	Allow      []Rule
	Code       int
	Message    string
	User       *user.DefaultInfo
	Constraint string
	Checks     []Check
}

func m(p *string, v string) bool { return p == nil || *p == v }

type authz struct{ c *Case }

func (z authz) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	u := a.GetUser()
	d, reason, err := authorizer.DecisionNoOpinion, "", error(nil)
	for _, r := range z.c.Allow {
		grp := r.Group == nil
		for _, g := range u.GetGroups() {
			if r.Group != nil && *r.Group == g {
				grp = true
			}
		}
		if grp && m(r.User, u.GetName()) && m(r.Verb, a.GetVerb()) && m(r.APIGroup, a.GetAPIGroup()) && m(r.Resource, a.GetResource()) &&
			m(r.Subresource, a.GetSubresource()) && m(r.Name, a.GetName()) && m(r.Namespace, a.GetNamespace()) && m(r.Path, a.GetPath()) {
			if r.Error != "" {
				d, reason, err = authorizer.DecisionNoOpinion, "", errors.New(r.Error)
			} else if r.Deny {
				d, reason = authorizer.DecisionDeny, "denied by rule"
			} else {
				d = authorizer.DecisionAllow
			}
			break
		}
	}
	z.c.Checks = append(z.c.Checks, Check{
		User: user.DefaultInfo{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()},
		Verb: a.GetVerb(), APIGroup: a.GetAPIGroup(), APIVersion: a.GetAPIVersion(), Resource: a.GetResource(),
		Subresource: a.GetSubresource(), Name: a.GetName(), Namespace: a.GetNamespace(), Path: a.GetPath(),
		ResourceRequest: a.IsResourceRequest(), Allowed: d == authorizer.DecisionAllow,
	})
	return d, reason, err
}

type sink struct{ ev *auditinternal.Event }

func (s *sink) ProcessEvents(evs ...*auditinternal.Event) bool {
	for _, e := range evs {
		s.ev = e.DeepCopy()
	}
	return true
}

func main() {
	var cases []*Case
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		panic(err)
	}
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, metav1.SchemeGroupVersion)
	for _, c := range cases {
		c.Checks = nil
		var got *user.DefaultInfo
		inner := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			u, _ := request.UserFrom(req.Context())
			got = &user.DefaultInfo{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
		})
		// a fresh handler per case: no mode-index cache carried over
		h := impersonation.WithConstrainedImpersonation(inner, authz{c}, serializer.NewCodecFactory(s))
		sk := &sink{}
		h = filters.WithAudit(h, sk, policy.NewFakePolicyRuleEvaluator(auditinternal.LevelMetadata, nil), nil)
		requester := c.Requester
		ri := c.Request
		outer := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			ctx := request.WithUser(req.Context(), &requester)
			ctx = request.WithRequestInfo(ctx, &ri)
			h.ServeHTTP(w, req.WithContext(ctx))
		})
		top := filters.WithAuditInit(outer)
		if len(c.Prior) > 0 {
			// an earlier request of the same requester on the same handler:
			// the mode that allowed it is tried first afterwards
			req := httptest.NewRequest("GET", "/x", nil)
			for _, kv := range c.Prior {
				req.Header.Add(kv[0], kv[1])
			}
			top.ServeHTTP(httptest.NewRecorder(), req)
			c.Checks = nil
			got = nil
		}
		req := httptest.NewRequest("GET", "/x", nil)
		for _, kv := range c.Headers {
			req.Header.Add(kv[0], kv[1])
		}
		w := httptest.NewRecorder()
		top.ServeHTTP(w, req)
		c.Code = w.Code
		c.User = got
		if got == nil {
			var st metav1.Status
			if err := json.Unmarshal(w.Body.Bytes(), &st); err == nil {
				c.Message = st.Message
			} else {
				c.Message = "RAW:" + w.Body.String()
			}
			c.Code = w.Code
		} else if sk.ev != nil && sk.ev.AuthenticationMetadata != nil {
			c.Constraint = sk.ev.AuthenticationMetadata.ImpersonationConstraint
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	enc.Encode(cases)
}
