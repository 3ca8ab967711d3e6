/* What the files of app/jobs/ share (not for use outside it). */
#ifndef MTLAB_APP_JOB_INTERNAL_H
#define MTLAB_APP_JOB_INTERNAL_H

#include "jobs/jobs.h"

/* job.json (job_file.c) */
int job_file_write(const job_info *j);
int job_file_read(job_info *j, const char *dir);
double job_wall_time(void);
/* /proc/PID/stat's start time; 0 when there is no such process or it is a zombie. */
unsigned long long job_pid_start_time(pid_t pid);
int job_pid_alive(pid_t pid, unsigned long long start);

/* Launchers (job_local.c, job_slurm.c). launch: start `mtlab train runs/NAME/config.lua --job
 * [--resume]` in j->cwd, writing job.json (the launcher's one write) before it can begin. */
int job_local_launch(job_info *j, int resume);
int job_slurm_launch(job_info *j, int resume);
int job_slurm_stop(job_info *j);
/* Slurm's view of a job: pending, running, or ended (*state set from sacct when it knows, else
 * left alone); 0, or -1 when Slurm cannot be asked. */
int job_slurm_query(const job_info *j, int *active, job_state *state);
/* The mtlab binary's absolute path (what the launchers run). */
int job_self_exe(char *out, size_t n);

#endif
