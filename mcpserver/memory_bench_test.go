package mcpserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkStdioLargeFold sends one fold_turn of about 15 MB (it
// peaked at 984 MB RSS) to a real `contextfold mcp` subprocess and reports
// the subprocess's peak RSS in MB and as a multiple of the frame (rss-x).
// MCP_BENCH_MB sets the content size in MB.
func BenchmarkStdioLargeFold(b *testing.B) {
	mb := 15
	if v, err := strconv.Atoi(os.Getenv("MCP_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	var peak, frame int
	for i := range b.N {
		dir := filepath.Join(b.TempDir(), ".contextfold")
		w := startWireB(b, dir)
		content := strings.Repeat("2026-03-02 10:00:01 INFO worker-7 processed job 118 in 12ms ok\n", mb<<20/64)
		line := fmt.Sprintf(`{"jsonrpc":"2.0","id":"fold","method":"tools/call","params":{"name":"fold_turn","arguments":{"step_id":%d,"summary":"big log","content":%q}}}`, i+1, content)
		frame = len(line)
		w.send(line)
		r := w.next()
		if r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
			b.Fatalf("fold: %.300s", r.raw)
		}
		peak = max(peak, vmHWMOf(b, w.cmd.Process.Pid))
	}
	b.ReportMetric(float64(peak)/(1<<20), "rss-MB")
	b.ReportMetric(float64(peak)/float64(frame), "rss-x")
	b.ReportMetric(float64(frame)/(1<<20), "frame-MB")
}

// vmHWMOf returns a process's peak resident set in bytes (Linux).
func vmHWMOf(b *testing.B, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skip("no /proc: peak RSS is measured on Linux only")
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb << 10
		}
	}
	return 0
}
