package main

import (
	"fmt"
	"io"
)

const recordUsage = `usage: weir record --url http://HOST:PORT --vertex V --subtask N [--for D] [--job JOB] [--token T]
`

func recordMain(args []string, stdout, stderr io.Writer) int {
	fmt.Fprint(stderr, "weir record: not built yet\n"+recordUsage)
	return 2
}
