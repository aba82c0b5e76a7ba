"""What the benchmark measures: kernel names, problem sizes, bytes moved, tolerances and targets.

Plain constants only (no numpy, no framework): every other benchmark module imports this one, the
child processes included, and a child's "import + init" time must not include anything else.
"""

MARK = "BENCH_JSON "  # a child prints its result as one line: MARK + JSON

KERNELS = ["saxpy", "integrate", "nbody", "neo_hookean", "tiny", "cloth"]
# kernels in the module: the five single ones, cloth_springs, cloth_integrate and cloth_loss
MODULE_KERNELS = 8
COMPUTE_BOUND = ["nbody", "neo_hookean", "cloth"]
MEMORY_BOUND = ["saxpy", "integrate", "tiny"]

# problem sizes (elements; nbody: bodies; cloth: particles, a square grid, so a square number).
# Memory-bound sizes are chosen to be far out of the 32 MiB L3 cache of the development machine.
SMALL = dict.fromkeys(KERNELS, 64)  # cold compile and warm start: 64 elements, cloth 8x8
FULL = {
    "saxpy": 16_777_216,
    "integrate": 4_194_304,
    "nbody": 4096,
    "neo_hookean": 1_000_000,
    "tiny": 16_777_216,
    "cloth": 512 * 512,
}
QUICK = {
    "saxpy": 8_388_608,
    "integrate": 2_097_152,
    "nbody": 1024,
    "neo_hookean": 200_000,
    "tiny": 8_388_608,
    "cloth": 256 * 256,
}

# bytes read + bytes written per element and launch (float32 = 4 bytes, vec3 = 12 bytes)
BYTES_PER_ELEMENT = {
    "saxpy": 4 + 4 + 4,  # read x, y; write y
    "integrate": 12 * 4,  # read x, v; write x, v
    "tiny": 4 + 4,  # read x; write y
}
# numpy copy bandwidth: np.copyto(dst, src), two float32 arrays of COPY_BYTES each
COPY_BYTES = 128 * 2**20  # 256 MiB in all
COPY_REPS = 9

# backward: each repeat is one forward on a new tape plus tape.backward; at least --runs repeats,
# more (up to BWD_MAX_REPS) while they fit in BWD_BUDGET_S per kernel
BWD_BUDGET_S = 1.0
BWD_MAX_REPS = 25
# input gradients agree when |g - w| <= GRAD_RTOL |w| + GRAD_ATOL max|w| elementwise (float32
# sums in different orders; n-body sums 4096 terms of both signs per element)
GRAD_RTOL, GRAD_ATOL = 1e-3, 1e-4

# the core benchmark's targets
TARGET_RATIO = 0.556  # gradloom time / warp time on compute-bound kernels (>= 1.8x throughput)
TARGET_COPY_FRACTION = 0.70  # memory-bound kernels: gradloom GB/s / numpy copy GB/s
TARGET_LAUNCH_US = 3.0
TARGET_PREPARED_US = 1.0
TARGET_SCALING = 1.7  # gradloom forward time, 1 thread / 2 threads

# the cloth: spacing 1/side, particle positions jittered by CLOTH_JITTER spacings, semi-implicit
# Euler with time step CLOTH_DT; stiffness and damping per spring
CLOTH_KE, CLOTH_KD, CLOTH_DT, CLOTH_JITTER = 2000.0, 1.0, 0.005, 0.1
CLOTH_GRAVITY = (0.0, -9.8, 0.0)
