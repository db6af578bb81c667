/* opencl-calls.h - X-macro list of the OpenCL calls the back end records:
 * GPD_OCL_CALL(return type, name, (typed parameters), (argument names)).
 *
 * One list drives the three places that must agree on these calls: the
 * recording bodies gpd_ocl_call_<name> (opencl-calls.c, declared in
 * opencl.h), the interposed exported symbols (opencl-wrappers.c) and the
 * loader layer's dispatch entries (opencl-layer.c).  Each name is also a
 * member of gpd_ocl_api_t (opencl-fns.h) and of the ICD dispatch table
 * cl_icd_dispatch (CL/cl_icd.h). */
GPD_OCL_CALL(cl_command_queue, clCreateCommandQueue,
             (cl_context ctx, cl_device_id dev, cl_command_queue_properties props, cl_int *err),
             (ctx, dev, props, err))
GPD_OCL_CALL(cl_command_queue, clCreateCommandQueueWithProperties,
             (cl_context ctx, cl_device_id dev, const cl_queue_properties *props, cl_int *err),
             (ctx, dev, props, err))
GPD_OCL_CALL(cl_int, clEnqueueNDRangeKernel,
             (cl_command_queue q, cl_kernel k, cl_uint dim, const size_t *off, const size_t *gws, const size_t *lws,
              cl_uint nw, const cl_event *wl, cl_event *ev),
             (q, k, dim, off, gws, lws, nw, wl, ev))
GPD_OCL_CALL(cl_int, clEnqueueTask, (cl_command_queue q, cl_kernel k, cl_uint nw, const cl_event *wl, cl_event *ev),
             (q, k, nw, wl, ev))
GPD_OCL_CALL(cl_int, clEnqueueReadBuffer,
             (cl_command_queue q, cl_mem b, cl_bool blocking, size_t off, size_t size, void *ptr, cl_uint nw,
              const cl_event *wl, cl_event *ev),
             (q, b, blocking, off, size, ptr, nw, wl, ev))
GPD_OCL_CALL(cl_int, clEnqueueWriteBuffer,
             (cl_command_queue q, cl_mem b, cl_bool blocking, size_t off, size_t size, const void *ptr, cl_uint nw,
              const cl_event *wl, cl_event *ev),
             (q, b, blocking, off, size, ptr, nw, wl, ev))
GPD_OCL_CALL(cl_int, clEnqueueCopyBuffer,
             (cl_command_queue q, cl_mem src, cl_mem dst, size_t soff, size_t doff, size_t size, cl_uint nw,
              const cl_event *wl, cl_event *ev),
             (q, src, dst, soff, doff, size, nw, wl, ev))
GPD_OCL_CALL(cl_int, clEnqueueReadBufferRect,
             (cl_command_queue q, cl_mem b, cl_bool blocking, const size_t *boff, const size_t *hoff,
              const size_t *region, size_t brow, size_t bslice, size_t hrow, size_t hslice, void *ptr, cl_uint nw,
              const cl_event *wl, cl_event *ev),
             (q, b, blocking, boff, hoff, region, brow, bslice, hrow, hslice, ptr, nw, wl, ev))
GPD_OCL_CALL(cl_int, clEnqueueWriteBufferRect,
             (cl_command_queue q, cl_mem b, cl_bool blocking, const size_t *boff, const size_t *hoff,
              const size_t *region, size_t brow, size_t bslice, size_t hrow, size_t hslice, const void *ptr,
              cl_uint nw, const cl_event *wl, cl_event *ev),
             (q, b, blocking, boff, hoff, region, brow, bslice, hrow, hslice, ptr, nw, wl, ev))
GPD_OCL_CALL(cl_int, clEnqueueCopyBufferRect,
             (cl_command_queue q, cl_mem src, cl_mem dst, const size_t *soff, const size_t *doff,
              const size_t *region, size_t srow, size_t sslice, size_t drow, size_t dslice, cl_uint nw,
              const cl_event *wl, cl_event *ev),
             (q, src, dst, soff, doff, region, srow, sslice, drow, dslice, nw, wl, ev))
GPD_OCL_CALL(cl_int, clEnqueueFillBuffer,
             (cl_command_queue q, cl_mem b, const void *pat, size_t psize, size_t off, size_t size, cl_uint nw,
              const cl_event *wl, cl_event *ev),
             (q, b, pat, psize, off, size, nw, wl, ev))
GPD_OCL_CALL(cl_mem, clCreateBuffer, (cl_context ctx, cl_mem_flags flags, size_t size, void *host, cl_int *err),
             (ctx, flags, size, host, err))
GPD_OCL_CALL(cl_int, clReleaseMemObject, (cl_mem m), (m))
GPD_OCL_CALL(cl_int, clFinish, (cl_command_queue q), (q))
GPD_OCL_CALL(cl_int, clWaitForEvents, (cl_uint n, const cl_event *list), (n, list))
GPD_OCL_CALL(cl_int, clReleaseCommandQueue, (cl_command_queue q), (q))
GPD_OCL_CALL(cl_int, clReleaseKernel, (cl_kernel k), (k))
