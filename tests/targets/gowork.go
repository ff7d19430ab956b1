// A Go program that profiles itself (runtime/pprof) for two seconds: car's
// work three times bike's, each under its pprof label vehicle=car or bike.
// Its CPU profile, re-encoded by `go tool pprof -proto', is a pprof file
// another tool wrote, for pyrospy report.  usage: gowork OUT.pprof
package main

import (
	"context"
	"os"
	"runtime/pprof"
	"time"
)

var sink int

//go:noinline
func spin(n int) {
	for i := 0; i < n; i++ {
		sink += i
	}
}

//go:noinline
func car() {
	spin(3000000)
}

//go:noinline
func bike() {
	spin(1000000)
}

func main() {
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		pprof.Do(context.Background(), pprof.Labels("vehicle", "car"),
			func(context.Context) { car() })
		pprof.Do(context.Background(), pprof.Labels("vehicle", "bike"),
			func(context.Context) { bike() })
	}
	pprof.StopCPUProfile()
	f.Close()
}
