/* opencl-fns.h - X-macro list of the OpenCL entry points the back end
 * resolves with dlsym(RTLD_NEXT): GPD_OCL_FN(return type, name, (args)). */
GPD_OCL_FN(cl_command_queue, clCreateCommandQueue,
           (cl_context, cl_device_id, cl_command_queue_properties, cl_int *))
GPD_OCL_FN(cl_command_queue, clCreateCommandQueueWithProperties,
           (cl_context, cl_device_id, const cl_queue_properties *, cl_int *))
GPD_OCL_FN(cl_int, clEnqueueNDRangeKernel,
           (cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, const size_t *, cl_uint,
            const cl_event *, cl_event *))
GPD_OCL_FN(cl_int, clEnqueueTask, (cl_command_queue, cl_kernel, cl_uint, const cl_event *, cl_event *))
GPD_OCL_FN(cl_int, clEnqueueReadBuffer,
           (cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, cl_uint, const cl_event *, cl_event *))
GPD_OCL_FN(cl_int, clEnqueueWriteBuffer,
           (cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *, cl_uint, const cl_event *,
            cl_event *))
GPD_OCL_FN(cl_int, clEnqueueCopyBuffer,
           (cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint, const cl_event *, cl_event *))
GPD_OCL_FN(cl_int, clEnqueueReadBufferRect,
           (cl_command_queue, cl_mem, cl_bool, const size_t *, const size_t *, const size_t *, size_t, size_t,
            size_t, size_t, void *, cl_uint, const cl_event *, cl_event *))
GPD_OCL_FN(cl_int, clEnqueueWriteBufferRect,
           (cl_command_queue, cl_mem, cl_bool, const size_t *, const size_t *, const size_t *, size_t, size_t,
            size_t, size_t, const void *, cl_uint, const cl_event *, cl_event *))
GPD_OCL_FN(cl_int, clEnqueueCopyBufferRect,
           (cl_command_queue, cl_mem, cl_mem, const size_t *, const size_t *, const size_t *, size_t, size_t,
            size_t, size_t, cl_uint, const cl_event *, cl_event *))
GPD_OCL_FN(cl_int, clEnqueueFillBuffer,
           (cl_command_queue, cl_mem, const void *, size_t, size_t, size_t, cl_uint, const cl_event *,
            cl_event *))
GPD_OCL_FN(cl_mem, clCreateBuffer, (cl_context, cl_mem_flags, size_t, void *, cl_int *))
GPD_OCL_FN(cl_int, clReleaseMemObject, (cl_mem))
GPD_OCL_FN(cl_int, clFinish, (cl_command_queue))
GPD_OCL_FN(cl_int, clWaitForEvents, (cl_uint, const cl_event *))
GPD_OCL_FN(cl_int, clReleaseCommandQueue, (cl_command_queue))
GPD_OCL_FN(cl_int, clReleaseKernel, (cl_kernel))
/* used, not intercepted */
GPD_OCL_FN(cl_int, clSetEventCallback, (cl_event, cl_int, void(CL_CALLBACK *)(cl_event, cl_int, void *), void *))
GPD_OCL_FN(cl_int, clGetEventProfilingInfo, (cl_event, cl_profiling_info, size_t, void *, size_t *))
GPD_OCL_FN(cl_int, clGetEventInfo, (cl_event, cl_event_info, size_t, void *, size_t *))
GPD_OCL_FN(cl_int, clRetainEvent, (cl_event))
GPD_OCL_FN(cl_int, clReleaseEvent, (cl_event))
GPD_OCL_FN(cl_int, clGetKernelInfo, (cl_kernel, cl_kernel_info, size_t, void *, size_t *))
GPD_OCL_FN(cl_int, clGetMemObjectInfo, (cl_mem, cl_mem_info, size_t, void *, size_t *))
GPD_OCL_FN(cl_int, clGetCommandQueueInfo, (cl_command_queue, cl_command_queue_info, size_t, void *, size_t *))
