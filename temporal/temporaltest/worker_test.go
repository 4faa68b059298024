package temporaltest

const workerEnv = "CADRE_TEMPORALTEST_WORKER"

// workerMain is the test binary run as a worker process.
func workerMain() int { return 0 }
