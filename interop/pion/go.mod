module braid/interop/pion

go 1.24.0

replace github.com/pion/transport/v5 v5.1.4 => github.com/pion/transport/v5 v5.0.0

require (
	github.com/pion/logging v0.2.4
	github.com/pion/sctp v1.12.1
)

require (
	github.com/pion/randutil v0.1.0 // indirect
	github.com/pion/transport/v5 v5.1.4 // indirect
)
