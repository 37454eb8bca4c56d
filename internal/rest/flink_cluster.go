package rest

import (
	"bufio"
	"bytes"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	rpprof "runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Flink's cluster resources: the task managers (/taskmanagers,
// TaskManagersInfo, TaskManagerDetailsInfo) and the job manager
// (/jobmanager/config, /environment, /metrics, /logs, /thread-dump). A
// Weir job runs in one process, which is both: one task manager whose
// slots are the subtasks of the jobs it runs, and one job manager. Their
// JVM metrics are the Go runtime's (runtime.MemStats): the heap is Go's
// heap, "non-heap" the runtime's other memory (stacks, GC metadata,
// ...), the garbage collector "Go" with its cycle count and total pause
// time; direct, mapped, metaspace, managed and network memory are 0, as
// Go has none of them.

func (s *Server) routeCluster(mux *http.ServeMux) {
	mux.HandleFunc("GET /taskmanagers", s.taskManagers)
	mux.HandleFunc("GET /taskmanagers/metrics", s.aggregatedTaskManagerMetrics)
	mux.HandleFunc("GET /taskmanagers/{tmid}", s.withTaskManager(s.taskManagerDetails))
	mux.HandleFunc("GET /taskmanagers/{tmid}/metrics", s.withTaskManager(func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, s.processMetrics())
	}))
	mux.HandleFunc("GET /taskmanagers/{tmid}/logs", s.withTaskManager(noLogs))
	mux.HandleFunc("GET /taskmanagers/{tmid}/thread-dump", s.guarded(s.withTaskManager(threadDump)))
	mux.HandleFunc("GET /jobmanager/config", s.jobManagerConfig)
	mux.HandleFunc("GET /jobmanager/environment", s.jobManagerEnvironment)
	mux.HandleFunc("GET /jobmanager/metrics", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, s.processMetrics())
	})
	mux.HandleFunc("GET /jobmanager/logs", noLogs)
	mux.HandleFunc("GET /jobmanager/thread-dump", s.guarded(threadDump))
	// The history server's per-job variants, which the UI asks for when
	// /config says web-history.
	mux.HandleFunc("GET /jobs/{jobid}/jobmanager/config", s.withJob(func(w http.ResponseWriter, r *http.Request, _ *entry) { s.jobManagerConfig(w, r) }))
	mux.HandleFunc("GET /jobs/{jobid}/jobmanager/environment", s.withJob(func(w http.ResponseWriter, r *http.Request, _ *entry) { s.jobManagerEnvironment(w, r) }))
}

// taskManagerID is the one task manager's id: "weir", or on a cluster
// member its group member id (as the subtasks' taskmanager-id).
func (s *Server) taskManagerID() string {
	for _, e := range s.entries() {
		if c := e.job.Snapshot().Cluster; c != nil && c.Member != "" {
			return c.Member
		}
	}
	return "weir"
}

// withTaskManager answers 404 for another task manager id than ours.
func (s *Server) withTaskManager(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if id := r.PathValue("tmid"); id != s.taskManagerID() {
			writeError(w, http.StatusNotFound, "TaskManager "+id+" does not exist.")
			return
		}
		h(w, r)
	}
}

// slots returns the subtasks of the running jobs (the task manager's
// slots, all taken).
func (s *Server) slots() int {
	n := 0
	for _, e := range s.entries() {
		for _, v := range e.job.Snapshot().Vertices {
			n += v.Parallelism
		}
	}
	return n
}

// resourceProfile is Flink's ResourceProfileInfo (memory in MiB).
type resourceProfile struct {
	CPUCores          float64            `json:"cpuCores"`
	TaskHeapMemory    int                `json:"taskHeapMemory"`
	TaskOffHeapMemory int                `json:"taskOffHeapMemory"`
	ManagedMemory     int                `json:"managedMemory"`
	NetworkMemory     int                `json:"networkMemory"`
	ExtendedResources map[string]float64 `json:"extendedResources"`
}

// hardware is Flink's HardwareDescription.
type hardware struct {
	CPUCores       int   `json:"cpuCores"`
	PhysicalMemory int64 `json:"physicalMemory"`
	FreeMemory     int64 `json:"freeMemory"`
	ManagedMemory  int64 `json:"managedMemory"`
}

// memoryConfiguration is Flink's TaskExecutorMemoryConfiguration (bytes).
type memoryConfiguration struct {
	FrameworkHeap      int64 `json:"frameworkHeap"`
	TaskHeap           int64 `json:"taskHeap"`
	FrameworkOffHeap   int64 `json:"frameworkOffHeap"`
	TaskOffHeap        int64 `json:"taskOffHeap"`
	NetworkMemory      int64 `json:"networkMemory"`
	ManagedMemory      int64 `json:"managedMemory"`
	JVMMetaspace       int64 `json:"jvmMetaspace"`
	JVMOverhead        int64 `json:"jvmOverhead"`
	TotalFlinkMemory   int64 `json:"totalFlinkMemory"`
	TotalProcessMemory int64 `json:"totalProcessMemory"`
}

// taskManagerInfo is Flink's TaskManagerInfo; TaskManagerDetailsInfo
// adds allocatedSlots and metrics.
type taskManagerInfo struct {
	ID                     string              `json:"id"`
	Path                   string              `json:"path"`
	DataPort               int                 `json:"dataPort"`
	JMXPort                int                 `json:"jmxPort"`
	TimeSinceLastHeartbeat int64               `json:"timeSinceLastHeartbeat"`
	SlotsNumber            int                 `json:"slotsNumber"`
	FreeSlots              int                 `json:"freeSlots"`
	AssignedTasks          int                 `json:"assignedTasks"`
	TotalResource          resourceProfile     `json:"totalResource"`
	FreeResource           resourceProfile     `json:"freeResource"`
	Hardware               hardware            `json:"hardware"`
	MemoryConfiguration    memoryConfiguration `json:"memoryConfiguration"`
	// Blocked is omitted when false (Flink's JsonInclude NON_DEFAULT).
	Blocked bool `json:"blocked,omitempty"`
}

// memoryLimit is the Go runtime's soft memory limit (GOMEMLIMIT), or 0
// if there is none.
func memoryLimit() int64 {
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		return l
	}
	return 0
}

// physicalMemory reads MemTotal from /proc/meminfo (-1 if unknown, as
// Flink's Hardware.getSizeOfPhysicalMemory).
func physicalMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
					return kb * 1024
				}
			}
		}
	}
	return -1
}

func (s *Server) taskManagerInfo() taskManagerInfo {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap := int64(ms.HeapSys)
	if l := memoryLimit(); l > 0 {
		heap = l
	}
	slots := s.slots()
	host, port, _ := net.SplitHostPort(s.Addr())
	if host == "" {
		host = "localhost"
	}
	res := resourceProfile{CPUCores: float64(runtime.GOMAXPROCS(0)), TaskHeapMemory: int(heap >> 20), ExtendedResources: map[string]float64{}}
	free := resourceProfile{ExtendedResources: map[string]float64{}}
	return taskManagerInfo{
		// Subtasks exchange records in memory: no data port.
		ID: s.taskManagerID(), Path: "weir://" + net.JoinHostPort(host, port), DataPort: -1, JMXPort: -1,
		TimeSinceLastHeartbeat: time.Now().UnixMilli(), SlotsNumber: slots, FreeSlots: 0, AssignedTasks: slots,
		TotalResource: res, FreeResource: free,
		Hardware:            hardware{CPUCores: runtime.NumCPU(), PhysicalMemory: physicalMemory(), FreeMemory: heap},
		MemoryConfiguration: memoryConfiguration{TaskHeap: heap, TotalFlinkMemory: heap, TotalProcessMemory: int64(ms.Sys)},
	}
}

func (s *Server) taskManagers(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"taskmanagers": []taskManagerInfo{s.taskManagerInfo()}})
}

// taskManagerMetrics is Flink's TaskManagerMetricsInfo.
type taskManagerMetrics struct {
	HeapUsed                            int64              `json:"heapUsed"`
	HeapCommitted                       int64              `json:"heapCommitted"`
	HeapMax                             int64              `json:"heapMax"`
	NonHeapUsed                         int64              `json:"nonHeapUsed"`
	NonHeapCommitted                    int64              `json:"nonHeapCommitted"`
	NonHeapMax                          int64              `json:"nonHeapMax"`
	DirectCount                         int64              `json:"directCount"`
	DirectUsed                          int64              `json:"directUsed"`
	DirectMax                           int64              `json:"directMax"`
	MappedCount                         int64              `json:"mappedCount"`
	MappedUsed                          int64              `json:"mappedUsed"`
	MappedMax                           int64              `json:"mappedMax"`
	MemorySegmentsAvailable             int64              `json:"memorySegmentsAvailable"`
	MemorySegmentsTotal                 int64              `json:"memorySegmentsTotal"`
	NettyShuffleMemorySegmentsAvailable int64              `json:"nettyShuffleMemorySegmentsAvailable"`
	NettyShuffleMemorySegmentsUsed      int64              `json:"nettyShuffleMemorySegmentsUsed"`
	NettyShuffleMemorySegmentsTotal     int64              `json:"nettyShuffleMemorySegmentsTotal"`
	NettyShuffleMemoryAvailable         int64              `json:"nettyShuffleMemoryAvailable"`
	NettyShuffleMemoryUsed              int64              `json:"nettyShuffleMemoryUsed"`
	NettyShuffleMemoryTotal             int64              `json:"nettyShuffleMemoryTotal"`
	GarbageCollectors                   []garbageCollector `json:"garbageCollectors"`
}

// garbageCollector is Flink's GarbageCollectorInfo.
type garbageCollector struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
	Time  int64  `json:"time"`
}

// goMemory is the Go runtime's memory as the JVM's figures.
type goMemory struct {
	heapUsed, heapCommitted, heapMax          int64
	nonHeapUsed, nonHeapCommitted, nonHeapMax int64
	gcCount, gcTimeMs                         int64
}

func readGoMemory() goMemory {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := goMemory{
		heapUsed: int64(ms.HeapAlloc), heapCommitted: int64(ms.HeapSys - ms.HeapReleased), heapMax: int64(ms.HeapSys),
		nonHeapUsed:      int64(ms.StackInuse + ms.MSpanInuse + ms.MCacheInuse + ms.BuckHashSys + ms.GCSys + ms.OtherSys),
		nonHeapCommitted: int64(ms.StackSys + ms.MSpanSys + ms.MCacheSys + ms.BuckHashSys + ms.GCSys + ms.OtherSys),
		gcCount:          int64(ms.NumGC), gcTimeMs: int64(ms.PauseTotalNs / 1e6),
	}
	m.nonHeapMax = m.nonHeapCommitted
	if l := memoryLimit(); l > 0 {
		m.heapMax = l
	}
	return m
}

func (s *Server) taskManagerDetails(w http.ResponseWriter, r *http.Request) {
	m := readGoMemory()
	type slotInfo struct {
		JobID    string          `json:"jobId"`
		Resource resourceProfile `json:"resource"`
	}
	slots := []slotInfo{}
	for _, e := range s.entries() {
		for _, v := range e.job.Snapshot().Vertices {
			for range v.Parallelism {
				slots = append(slots, slotInfo{JobID: e.id, Resource: resourceProfile{ExtendedResources: map[string]float64{}}})
			}
		}
	}
	writeJSON(w, http.StatusOK, struct {
		taskManagerInfo
		AllocatedSlots []slotInfo         `json:"allocatedSlots"`
		Metrics        taskManagerMetrics `json:"metrics"`
	}{s.taskManagerInfo(), slots, taskManagerMetrics{
		HeapUsed: m.heapUsed, HeapCommitted: m.heapCommitted, HeapMax: m.heapMax,
		NonHeapUsed: m.nonHeapUsed, NonHeapCommitted: m.nonHeapCommitted, NonHeapMax: m.nonHeapMax,
		GarbageCollectors: []garbageCollector{{Name: "Go", Count: m.gcCount, Time: m.gcTimeMs}},
	}})
}

// processMetrics are the process's metrics under Flink's JobManager and
// TaskManager metric names (Status.JVM.*, Status.Flink.Memory.*,
// Status.Shuffle.Netty.*), from the Go runtime.
func (s *Server) processMetrics() map[string]string {
	m := readGoMemory()
	slots, running := s.slots(), 0
	for _, e := range s.entries() {
		if e.job.Snapshot().Job.State == "RUNNING" {
			running++
		}
	}
	i := func(x int64) string { return strconv.FormatInt(x, 10) }
	out := map[string]string{
		"Status.JVM.Memory.Heap.Used": i(m.heapUsed), "Status.JVM.Memory.Heap.Committed": i(m.heapCommitted), "Status.JVM.Memory.Heap.Max": i(m.heapMax),
		"Status.JVM.Memory.NonHeap.Used": i(m.nonHeapUsed), "Status.JVM.Memory.NonHeap.Committed": i(m.nonHeapCommitted), "Status.JVM.Memory.NonHeap.Max": i(m.nonHeapMax),
		"Status.JVM.Memory.Metaspace.Used": "0", "Status.JVM.Memory.Metaspace.Max": "0",
		"Status.JVM.Memory.Direct.Count": "0", "Status.JVM.Memory.Direct.MemoryUsed": "0", "Status.JVM.Memory.Direct.TotalCapacity": "0",
		"Status.JVM.Memory.Mapped.Count": "0", "Status.JVM.Memory.Mapped.MemoryUsed": "0", "Status.JVM.Memory.Mapped.TotalCapacity": "0",
		"Status.JVM.GarbageCollector.Go.Count": i(m.gcCount), "Status.JVM.GarbageCollector.Go.Time": i(m.gcTimeMs),
		"Status.JVM.Threads.Count":         strconv.Itoa(runtime.NumGoroutine()),
		"Status.JVM.CPU.Load":              "0",
		"Status.Flink.Memory.Managed.Used": "0", "Status.Flink.Memory.Managed.Total": "0",
		"Status.Shuffle.Netty.UsedMemory": "0", "Status.Shuffle.Netty.TotalMemory": "0",
		"Status.Shuffle.Netty.AvailableMemory": "0",
		"numRegisteredTaskManagers":            "1", "numRunningJobs": strconv.Itoa(running), "taskSlotsTotal": strconv.Itoa(slots), "taskSlotsAvailable": "0",
	}
	return out
}

// aggregatedTaskManagerMetrics is /taskmanagers/metrics: the one task
// manager's metrics, aggregated (min = max = avg = sum).
func (s *Server) aggregatedTaskManagerMetrics(w http.ResponseWriter, r *http.Request) {
	m := s.processMetrics()
	get := r.URL.Query().Get("get")
	if get == "" {
		answer(w, r, m)
		return
	}
	out := []map[string]any{}
	for _, id := range strings.Split(get, ",") {
		v, ok := m[id]
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		out = append(out, map[string]any{"id": id, "min": x, "max": x, "avg": x, "sum": x})
	}
	writeJSON(w, http.StatusOK, out)
}

// jobManagerConfig is /jobmanager/config: Flink's ClusterConfigurationInfo,
// a list of {key, value}, with the settings that hold for the process.
func (s *Server) jobManagerConfig(w http.ResponseWriter, r *http.Request) {
	host, port, _ := net.SplitHostPort(s.Addr())
	cfg := map[string]string{
		"rest.address": host, "rest.port": port, "rest.bind-address": host,
		"web.refresh-interval": "1000", "web.cancel.enable": "true", "web.submit.enable": "false",
		"taskmanager.numberOfTaskSlots": strconv.Itoa(s.slots()),
		"weir.go.version":               runtime.Version(), "weir.go.maxprocs": strconv.Itoa(runtime.GOMAXPROCS(0)),
	}
	if l := memoryLimit(); l > 0 {
		cfg["jobmanager.memory.heap.size"] = strconv.FormatInt(l, 10) + " bytes"
	}
	if v := os.Getenv("GOGC"); v != "" {
		cfg["weir.go.gogc"] = v
	}
	type entry struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	out := []entry{}
	for k, v := range cfg {
		out = append(out, entry{k, v})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Key < out[b].Key })
	writeJSON(w, http.StatusOK, out)
}

// jobManagerEnvironment is Flink's EnvironmentInfo: the "JVM" is Go's
// runtime, the "classpath" the program's module and its dependencies.
func (s *Server) jobManagerEnvironment(w http.ResponseWriter, r *http.Request) {
	opts := []string{"GOMAXPROCS=" + strconv.Itoa(runtime.GOMAXPROCS(0))}
	for _, k := range []string{"GOGC", "GOMEMLIMIT", "GODEBUG"} {
		if v := os.Getenv(k); v != "" {
			opts = append(opts, k+"="+v)
		}
	}
	classpath := []string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		classpath = append(classpath, bi.Main.Path+"@"+bi.Main.Version)
		for _, d := range bi.Deps {
			classpath = append(classpath, d.Path+"@"+d.Version)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"jvm":       map[string]any{"version": runtime.Version(), "arch": runtime.GOOS + "/" + runtime.GOARCH, "options": opts},
		"classpath": classpath,
	})
}

// noLogs is Flink's LogListInfo with no files: Weir logs through slog
// where the program sends it, not to files the server knows.
func noLogs(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"logs": []any{}})
}

// threadDump is Flink's ThreadDumpInfo of the process's goroutines
// (runtime/pprof's goroutine profile, debug=2), one entry per goroutine.
func threadDump(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	rpprof.Lookup("goroutine").WriteTo(&buf, 2)
	type threadInfo struct {
		ThreadName            string `json:"threadName"`
		StringifiedThreadInfo string `json:"stringifiedThreadInfo"`
	}
	out := []threadInfo{}
	for _, g := range strings.Split(strings.TrimSpace(buf.String()), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		name := strings.TrimSuffix(strings.TrimPrefix(head, "goroutine "), ":")
		out = append(out, threadInfo{ThreadName: "goroutine " + name, StringifiedThreadInfo: g + "\n\n"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"threadInfos": out})
}
