package clientgo

// Tables: `kubectl get <resource> -A` (and `-o wide`, and `--sort-by` on a
// few resources) against Herald prints what it prints against the
// apiserver, but for the columns of relative times (AGE, events' LAST SEEN
// and FIRST SEEN), which the two servers compute at different instants.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
)

// relativeColumns are the columns whose cells are durations up to now
// (events' FIRST SEEN is in -o wide).
var relativeColumns = map[string]bool{"AGE": true, "LAST SEEN": true, "FIRST SEEN": true}

// tableLines cuts kubectl's output into lines of cells without the relative
// time columns, each line its cells joined by " | ".
func tableLines(out string) []string {
	header, rows := splitTable(out)
	if header == nil {
		return nil
	}
	keep := func(cells []string) string {
		var out []string
		for i, h := range header {
			if !relativeColumns[h] && i < len(cells) {
				out = append(out, cells[i])
			}
		}
		return strings.Join(out, " | ")
	}
	lines := []string{keep(header)}
	for _, r := range rows {
		lines = append(lines, keep(r))
	}
	return lines
}

// sortBy is the `kubectl get --sort-by` tried per resource: kubectl asks
// for a Table with includeObject=Object and sorts the rows by a path into
// each row's object (a path outside the metadata needs the whole object).
var sortBy = map[string]string{
	"v1/pods":               "{.spec.nodeName}",
	"v1/events":             "{.reason}",
	"v1/configmaps":         "{.metadata.name}",
	"herald.dev/v1/widgets": "{.spec.size}",
}

// testTables runs kubectl get on every resource both serve; every kind
// whose table differs is reported, all at once.
func testTables(ctx context.Context, t *testing.T, c *cluster, res []apiRes, d *differences) {
	from := d.count()
	var (
		mu     sync.Mutex
		differ []string
	)
	type run struct {
		r    apiRes
		wide bool
		sort string
	}
	var runs []run
	sorted := 0
	for _, r := range res {
		runs = append(runs, run{r: r}, run{r: r, wide: true})
		if by, ok := sortBy[r.String()]; ok {
			runs = append(runs, run{r: r, sort: by})
			sorted++
		}
	}
	if sorted != len(sortBy) {
		t.Errorf("tables: --sort-by tried on %d resources of %d (%v): one is not served", sorted, len(sortBy), sortBy)
	}
	inParallel(len(runs), func(i int) {
		r := runs[i].r
		if tableDiffers(ctx, c, r, runs[i].wide, runs[i].sort, d) {
			mu.Lock()
			if !contains(differ, r.String()) {
				differ = append(differ, r.String())
			}
			mu.Unlock()
		}
	})
	sort.Strings(differ)
	t.Logf("tables: kubectl get -A (and -o wide) on %d resources, --sort-by on %d; %d differ: %s", len(res), sorted, len(differ), strings.Join(differ, " "))
	d.report(t, from)
}

// tableDiffers compares one `kubectl get` on both servers (sorted by the
// path sortPath if not empty), adding what differs to d.
func tableDiffers(ctx context.Context, c *cluster, r apiRes, wide bool, sortPath string, d *differences) bool {
	args := []string{"get", r.kubectlName(), "-A"}
	if wide {
		args = append(args, "-o", "wide")
	}
	if sortPath != "" {
		args = append(args, "--sort-by="+sortPath)
	}
	hout, herr, hx := c.kubectl(ctx, true, args...)
	aout, aerr, ax := c.kubectl(ctx, false, args...)
	what := "kubectl " + strings.Join(args, " ")
	if (hx == nil) != (ax == nil) {
		d.add("table", r.String(), what, []jsonDiff{{Path: "(exit)", Herald: fmt.Sprintf("%v %s", hx, strings.TrimSpace(herr)), API: fmt.Sprintf("%v %s", ax, strings.TrimSpace(aerr))}})
		return true
	}
	if strings.TrimSpace(herr) != strings.TrimSpace(aerr) {
		d.add("table", r.String(), what, []jsonDiff{{Path: "(stderr)", Herald: strings.TrimSpace(herr), API: strings.TrimSpace(aerr)}})
	}
	hl, al := tableLines(hout), tableLines(aout)
	var diffs []jsonDiff
	for i := 0; i < len(hl) || i < len(al); i++ {
		var x, y string
		if i < len(hl) {
			x = hl[i]
		} else {
			x = "(no line)"
		}
		if i < len(al) {
			y = al[i]
		} else {
			y = "(no line)"
		}
		if x != y {
			where := "header"
			if i > 0 {
				where = fmt.Sprintf("line %d", i)
			}
			diffs = append(diffs, jsonDiff{Path: where, Herald: x, API: y})
		}
	}
	if len(diffs) > 0 {
		keep := 6
		if diffs[0].Path == "header" {
			keep = 3
		}
		if len(diffs) > keep {
			diffs = append(diffs[:keep], jsonDiff{Path: fmt.Sprintf("(%d more lines differ)", len(diffs)-keep), Herald: "...", API: "..."})
		}
		d.add("table", r.String(), what, diffs)
		return true
	}
	return strings.TrimSpace(herr) != strings.TrimSpace(aerr)
}
