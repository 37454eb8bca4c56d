package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/monitor"
)

// Client reads a job's snapshots from a Weir REST server.
type Client struct {
	// Base is the server's URL, "http://host:port".
	Base string
	// Token, if set, is sent as a bearer token.
	Token string
	// HTTP is the client to use (nil: http.DefaultClient).
	HTTP *http.Client
}

func (c *Client) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.Base, "/")+path, nil)
	if err != nil {
		return err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(data)))
	}
	return json.Unmarshal(data, v)
}

// Job resolves a job by id or name; "" means the only (or first) job.
func (c *Client) Job(ctx context.Context, job string) (string, error) {
	var jobs struct {
		Jobs []struct{ ID, Status, Name string }
	}
	if err := c.get(ctx, "/jobs", &jobs); err != nil {
		return "", err
	}
	for _, j := range jobs.Jobs {
		if job == "" || j.ID == job || j.Name == job {
			return j.ID, nil
		}
	}
	if job == "" {
		return "", fmt.Errorf("the server at %s runs no job", c.Base)
	}
	return "", fmt.Errorf("the server at %s has no job %q", c.Base, job)
}

// Snapshot reads the job's snapshot now.
func (c *Client) Snapshot(ctx context.Context, job string) (*monitor.Snapshot, error) {
	var s monitor.Snapshot
	if err := c.get(ctx, "/weir/jobs/"+url.PathEscape(job)+"/snapshot", &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Observe takes samples snapshots of the job, every apart: the
// observation window of `weir doctor`.
func (c *Client) Observe(ctx context.Context, job string, samples int, every time.Duration) ([]*monitor.Snapshot, error) {
	var out []*monitor.Snapshot
	for i := range max(samples, 2) {
		if i > 0 {
			select {
			case <-time.After(every):
			case <-ctx.Done():
				return out, ctx.Err()
			}
		}
		s, err := c.Snapshot(ctx, job)
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Print writes findings as `weir doctor` prints them.
func Print(w io.Writer, job string, samples []*monitor.Snapshot, findings []Finding) {
	window := 0.0
	if len(samples) > 1 {
		window = float64(samples[len(samples)-1].Timestamp-samples[0].Timestamp) / 1000
	}
	name := job
	if len(samples) > 0 {
		name = fmt.Sprintf("%s (%s, %s)", samples[0].Job.Name, samples[0].Job.ID, samples[len(samples)-1].Job.State)
	}
	fmt.Fprintf(w, "job %s: %d samples over %.1f s\n", name, len(samples), window)
	if Problems(findings) == 0 {
		fmt.Fprintln(w, "no finding: none of the failures the doctor knows shows")
	}
	for i, f := range findings {
		tag := "[" + f.Kind + "]"
		if f.Note {
			tag = "note [" + f.Kind + "]"
		}
		fmt.Fprintf(w, "\n%d. %s %s\n", i+1, tag, f.Title)
		for _, e := range f.Evidence {
			fmt.Fprintf(w, "   evidence: %s\n", e)
		}
		fmt.Fprintf(w, "   cause:    %s\n", f.Cause)
		fmt.Fprintf(w, "   fix:      %s\n", f.Fix)
	}
}
