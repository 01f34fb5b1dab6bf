package clientgo

// The generated differential's known differences (TestGenerated): each a
// class, a regular expression over the difference's pattern (and,
// optionally, over the resources it was seen on: all must match), and why
// it is known. A difference matching none fails the test. Prune an entry
// when its class is fixed.

import "regexp"

type knownDiff struct {
	Class    string // missing-resource, discovery, status, error, content-type, value, bytes, table, watch, transport
	Pattern  string // regular expression over the pattern printed in the summary
	Resource string // regular expression every resource must match ("" = any)
	Reason   string
}

var knownGeneratedList = []knownDiff{}

// knownGenerated returns the reason a difference is known, if it is.
func knownGenerated(class, pattern string, resources []string) (string, bool) {
	for _, k := range knownGeneratedList {
		if k.Class != class || !regexp.MustCompile(k.Pattern).MatchString(pattern) {
			continue
		}
		ok := true
		if k.Resource != "" {
			re := regexp.MustCompile(k.Resource)
			for _, r := range resources {
				if !re.MatchString(r) {
					ok = false
					break
				}
			}
		}
		if ok {
			return k.Reason, true
		}
	}
	return "", false
}
