/* control-id.c - the daemon-wide Control id space (control.h): ids of a
 * ControlRequest's Control messages (control.c) and of the policy's
 * CONTROL_POLICY messages (policy.c), so that an ack never matches the
 * wrong request.  Below both files.  Main thread only. */
#include <stdint.h>

#include "control.h"

static uint64_t next_id = 1;

uint64_t gpd_control_next_id(void) { return next_id++; }
