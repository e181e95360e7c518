module memkit.test/cgo

go 1.19
