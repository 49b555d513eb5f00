// host stand-in: __half lives in cuda_host.h (force-included)
#pragma once
