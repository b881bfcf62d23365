module tickwheel/clients/go

go 1.19
