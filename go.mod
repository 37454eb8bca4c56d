module github.com/weirstream/weir

go 1.26

require (
	go.uber.org/goleak v1.3.0
	pgregory.net/rapid v1.3.0
)
